# redis-rebalancer's image (one platform) where a Docker daemon and a registry are at hand: a static binary on
# distroless/static, run as its non-root user. `make image` builds the same image without a
# daemon or a registry (hack/image: an empty base, the binary, passwd/group entries for the
# nonroot user 65532 and the CA bundle).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=unknown
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath \
      -ldflags "-s -w -X github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app.Version=${VERSION} -X github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app.Revision=${REVISION}" \
      -o /out/redis-rebalancer ./cmd/redis-rebalancer

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title=redis-rebalancer \
      org.opencontainers.image.source=https://github.com/redis-rebalancer/redis-rebalancer \
      org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.revision=${REVISION}
COPY --from=build /out/redis-rebalancer /redis-rebalancer
USER 65532:65532
ENTRYPOINT ["/redis-rebalancer"]
