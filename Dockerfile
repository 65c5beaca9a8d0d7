# Spotter on Debian bookworm with Debian's Chromium.
#
#   docker build -t spotter .
#   docker run --rm spotter                                  # the demo task (the default command)
#   docker run -i --rm spotter mcp --demo                    # an MCP server on stdio, for a client that starts it
#   docker run --rm -p 8080:8080 spotter serve --addr 0.0.0.0:8080
#                                                            # the panel, and MCP over streamable HTTP at /mcp,
#                                                            # behind the token it prints (or $SPOTTER_TOKEN)
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The version `spotter version` and the MCP server report: docker build --build-arg VERSION=$(git describe --tags).
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-X main.version=${VERSION}" -o /out/spotter ./cmd/spotter

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
# spotter serve's default port; serve must listen on 0.0.0.0 in a container to be reached through it.
EXPOSE 8080
ENTRYPOINT ["spotter"]
CMD ["run", "/opt/spotter/examples/demo.yaml", "--out", "/home/spotter/runs/demo"]
