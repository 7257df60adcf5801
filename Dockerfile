# ticketrush image: a static Go binary on Debian slim (curl is there for the readiness healthcheck).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -buildvcs=false -trimpath -ldflags="-s -w" -o /out/ticketrush ./cmd/ticketrush

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ticketrush /usr/local/bin/ticketrush
USER 65532:65532
ENV HTTP_ADDR=:8080
EXPOSE 8080
# /readyz answers 200 only while Redis and Postgres answer; its 503s are what the TicketrushNotReady
# alert counts.
HEALTHCHECK --interval=5s --timeout=3s --start-period=15s --retries=3 \
  CMD curl -fsS -o /dev/null http://127.0.0.1:8080/readyz || exit 1
ENTRYPOINT ["ticketrush"]
CMD ["serve"]
