# The operator image: the manager (/manager). The guard sidecar binary joins it once
# runtime/cmd/guard exists.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /out/manager .

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/manager /
USER 65532:65532
ENTRYPOINT ["/manager"]
