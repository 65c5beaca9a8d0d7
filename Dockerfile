# Spotter on Debian bookworm with Debian's Chromium. `docker run IMAGE` runs the demo task.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/spotter ./cmd/spotter

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      chromium chromium-headless-shell fonts-dejavu-core fonts-liberation ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/spotter /usr/local/bin/spotter
COPY examples /opt/spotter/examples
RUN useradd --create-home --uid 10001 spotter
USER spotter
WORKDIR /home/spotter
ENTRYPOINT ["spotter"]
CMD ["run", "/opt/spotter/examples/demo.yaml", "--out", "/home/spotter/runs/demo"]
