// Package sql embeds the Postgres migrations: NNNN_name.sql, applied in order, each once.
package sql

import "embed"

// Migrations holds every migration file.
//
//go:embed *.sql
var Migrations embed.FS
