# redis-rebalancer's image where a Docker daemon and a registry are at hand: a static binary on
# distroless/static, run as its non-root user. `make image` builds the same image without a
# daemon or a registry (hack/image: an empty base, the binary, passwd/group entries for the
# nonroot user 65532 and the CA bundle).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath \
      -ldflags "-s -w -X github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app.Version=${VERSION}" \
      -o /out/redis-rebalancer ./cmd/redis-rebalancer

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/redis-rebalancer /redis-rebalancer
USER 65532:65532
ENTRYPOINT ["/redis-rebalancer"]
