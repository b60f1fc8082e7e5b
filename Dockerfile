# spool in a container (docs/OPERATIONS.md "Deployment"). Multi-stage: the build stage compiles
# TypeScript and drops dev dependencies; the runtime stage is node:20 slim with the compiled
# server only, running as the unprivileged `node` user, data in the /data volume. It listens on
# every interface, so it refuses to start without API keys:
#   docker build -t spool .
#   docker run -d --name spool -p 4000:4000 -v spool-data:/data --stop-timeout 30 \
#     --env-file spool.env spool        # spool.env: SERVICE_API_KEYS=... (README "Settings")
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
COPY test ./test
COPY bench ./bench
COPY fuzz ./fuzz
# `prepare` builds on install; `npm run build` again is a no-op safety for a changed tsconfig.
RUN npm ci && npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    SERVICE_HOST=0.0.0.0 \
    SERVICE_PORT=4000 \
    SERVICE_DATA_DIR=/data \
    SERVICE_SHUTDOWN_GRACE_MS=8000
# No SERVICE_ALLOW_INSECURE_NO_AUTH here: serving without auth on every interface is a choice made
# on `docker run` (-e SERVICE_ALLOW_INSECURE_NO_AUTH=1, on a private network), never a default.
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist/cli.js ./dist/cli.js
COPY --from=build /src/dist/src ./dist/src
COPY static ./static
COPY README.md ./
COPY docs ./docs
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 4000
# Ready, not just alive: a recovering server is not yet serving (503 not_ready).
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.SERVICE_PORT||4000)+'/v0/ready').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM drains (in-flight requests finish, a final checkpoint) within SERVICE_SHUTDOWN_GRACE_MS:
# 8 s (then what is still open is closed and the drain finishes within 1 s), under Docker's default
# stop timeout of 10 s, so a plain `docker stop` never SIGKILLs a drain; `--stop-timeout 30` on `docker run` leaves room for a longer grace.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "dist/cli.js"]
CMD ["serve"]
