# A static randomsecret binary on distroless, non-root.
# Build: docker build -t randomsecret .   (needs network access for crates and images)
FROM rust:1.95-alpine AS build
# make: jemalloc (the binary's allocator) is built from source by tikv-jemalloc-sys.
RUN apk add --no-cache musl-dev make
WORKDIR /src
COPY . .
# musl: a fully static binary (make static proves the same build links here).
RUN cargo build --release --locked --bin randomsecret \
 && cp target/release/randomsecret /randomsecret

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /randomsecret /randomsecret
USER 65532:65532
ENTRYPOINT ["/randomsecret"]
CMD ["controller"]
