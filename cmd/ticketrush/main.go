// Command ticketrush is the ticketing service and its tools. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout)
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "ticketrush:", err)
	if errors.As(err, new(usageError)) {
		os.Exit(2)
	}
	os.Exit(1)
}
