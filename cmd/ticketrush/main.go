// Command ticketrush is the ticketing service and its tools. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ticketrush:", err)
		os.Exit(1)
	}
}
