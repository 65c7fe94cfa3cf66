# The fibonacci-cards server. Built by docker-compose.yml; see the README.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release -p server

FROM debian:bookworm-slim
RUN useradd --create-home --uid 10001 fib
COPY --from=build /src/target/release/fibonacci-cards /usr/local/bin/fibonacci-cards
COPY web /app/web
WORKDIR /app
# Listen on all interfaces inside the container; the client is served from /app/web.
ENV FIB_BIND=0.0.0.0 FIB_PORT=8080 FIB_WEB_DIR=/app/web
USER fib
EXPOSE 8080
CMD ["fibonacci-cards"]
