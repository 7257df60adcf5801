# ticketrush: `make run` sets everything up and runs the service; `make test` runs every test.
SHELL := /bin/bash
GO ?= go
export JWT_SECRET ?= dev-jwt-secret-change-me-0123456789abcdef
export QUEUE_TOKEN_SECRET ?= dev-queue-secret-change-me-0123456789abc
export ADMIN_TOKEN ?= dev-admin-token
export HTTP_ADDR ?= 127.0.0.1:8080
ADDR := http://$(HTTP_ADDR)
BIN := bin/ticketrush

.PHONY: run test services build vet demo clean

build:
	$(GO) build -o $(BIN) ./cmd/ticketrush

services:
	@scripts/services.sh

## run: set up Redis and Postgres, start the service, create a demo concert and print how to use it
run: services build
	@scripts/run.sh $(BIN) $(ADDR)

## test: set up Redis and Postgres, then every unit and integration test with the race detector
test: services
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 9m ./...

clean:
	rm -rf bin
