# One image carries both binaries: the manager (/manager) and the guard sidecar (/guard).
# The Envoy external processor (docs/extproc.md) has its own: --target extproc.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /out/manager ./cmd/manager && \
    CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /out/guard ./cmd/guard && \
    CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /out/guard-extproc ./cmd/guard-extproc

FROM gcr.io/distroless/static:nonroot AS extproc
COPY --from=build /out/guard-extproc /
USER 65532:65532
ENTRYPOINT ["/guard-extproc"]

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/manager /out/guard /
USER 65532:65532
ENTRYPOINT ["/manager"]
