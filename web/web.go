// Package web holds the pages people see, as plain files embedded in the binary: the fan's page (the
// waiting room, the seat map, points and the receipt) and the operator's console. There is no build
// step; internal/http serves them, with the security headers, from the api role.
package web

import "embed"

// Files holds static/: the HTML, CSS and JavaScript of both pages.
//
//go:embed static
var Files embed.FS
