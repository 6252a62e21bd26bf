FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY tsconfig.json drizzle.config.ts ./
COPY src ./src
COPY scripts ./scripts
COPY migrations ./migrations
# The demo deploys the test contracts and builds its agents' transactions with the fixture helpers.
COPY test/fixtures ./test/fixtures
ENV NODE_ENV=production
EXPOSE 8080
ENTRYPOINT ["node", "--import", "tsx", "src/main.ts"]
CMD ["--role", "all"]
