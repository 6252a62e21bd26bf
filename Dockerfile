# docker build -t codetrail .                       the runtime image: compiled daemon, production dependencies, migrations
# docker build -t codetrail-demo --target demo .    the embedded devnet demo (anvil, the harness, tsx)
ARG NODE_IMAGE=node:22-bookworm-slim

# Every dependency, for the compiler and for the demo.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

FROM deps AS build
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY scripts ./scripts
COPY migrations ./migrations
RUN npm run build

# --omit=optional as well: it drops the anvil binary (devnet only) and TypeScript, an optional peer of
# viem that npm installs with --omit=dev alone.
FROM ${NODE_IMAGE} AS production-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund && npm cache clean --force

FROM ${NODE_IMAGE} AS demo
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json tsconfig.json ./
COPY src ./src
COPY scripts ./scripts
COPY migrations ./migrations
# The demo runs on the harness: the devnet, the test contracts and the fixture helpers its agents use.
COPY harness ./harness
USER node
EXPOSE 8080
ENTRYPOINT ["node", "--import", "tsx", "harness/demo/main.ts"]

# The runtime image, last so that a plain `docker build` makes it. dist holds the migrations and the SQL definitions too.
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=production-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
USER node
EXPOSE 8080
ENTRYPOINT ["node", "dist/scripts/codetrail.js"]
CMD ["start", "--role", "all"]
