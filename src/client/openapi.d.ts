/** Generated from openapi.json by `npm run openapi`: never edit by hand. */

export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The process is up */
        get: operations["getHealth"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Database reachable; Redis, node and how far indexing lags the node reported
         * @description Ready (200) while the database answers: the API serves from it, so Redis or the node being down is reported in checks without taking the API out of a load balancer. Answers 503 with the same body when the database is down. Served from a snapshot at most a few seconds old.
         */
        get: operations["getReadiness"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/status": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The chain head, the index's position and finality, sync lag, pending log rate and recent reorgs
         * @description Cheap enough to poll: what the dashboard overview shows, from a snapshot at most a few seconds old. chainId picks another chain than the first configured one (its head as its follower last saw it); chains lists every chain.
         */
        get: operations["getStatus"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Prometheus metrics
         * @description This process's series in the Prometheus text format (roles without the API serve them on METRICS_PORT).
         */
        get: operations["getMetrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/builder-codes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Register a wallet and get its builder code
         * @description Idempotent: the same wallet, in any letter case, always gets the same code. With BUILDER_API_URL set, the code comes from that service (502 upstream_error when it fails).
         */
        post: operations["registerBuilderCode"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/builder-codes/{walletAddress}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A wallet's builder code and how many of its transactions carry it */
        get: operations["getBuilderCode"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/builder-codes/{code}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A builder code from any source: the BuilderCodes registry, the upstream API or issued here */
        get: operations["getBuilderCodeRecord"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/attributions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Attributed transactions and user operations, newest first
         * @description Newest first: by block time, then block number (with fromBlock or toBlock, by block number: the two orders differ only for rows of orphaned forks). Keyset-paginated: follow nextCursor; rows inserted meanwhile never make a page skip or repeat a row. A row that moves to another block meanwhile (above the finalized block only: a pending row sealed in a later block, a transaction mined again after a reorg) can be missed or repeated: bound toBlock by finalizedBlock of /v1/status for a walk where none can. walletAddress selects the code that wallet registered here.
         */
        get: operations["listAttributions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/builder-codes/{code}/stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A builder code's activity per UTC hour or day
         * @description Rows not removed, with block time in [since, until); since is rounded down and until up to whole UTC hours or days, and the answer reports the rounded range. Defaults: until = now, since = 7 days (hour) or 30 days (day) earlier; at most 10000 buckets. Read from a rollup kept in step with every write; only the total distinctSenders of a range that ends before the code's latest attribution is counted from the rows, which is slower. chainId=all sums every chain served (each chain's senders counted apart).
         */
        get: operations["getBuilderCodeStats"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/leaderboard": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The builder codes with the most attributions in a time range
         * @description Codes ordered by attributions not removed with block time in [since, until), rounded to whole UTC hours; each code's counts equal its stats for the same range with interval=hour. Defaults: until = now, since = 24 hours earlier, limit 20. One ranking answers every request for the same chains, range and limit for 1 s. chainId=all ranks the codes by their attributions on every chain served, summed.
         */
        get: operations["getLeaderboard"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/transactions/{hash}/attribution": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A transaction's decoded ERC-8021 suffix and matched builder codes
         * @description A transaction hash means something on one chain: where the deployment indexes several, name it with chainId.
         */
        get: operations["getTransactionAttribution"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/logs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Indexed logs filtered like eth_getLogs, oldest first
         * @description Keyset-paginated: follow nextCursor. topic1–3 filter only with address or topic0 (400 unindexed_filter otherwise): no index leads with them. A pending log that its sealed block places at another height meanwhile can be missed or repeated: bound toBlock by finalizedBlock of /v1/status for a walk where none can.
         */
        get: operations["listLogs"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Attribution events, live, as Server-Sent Events
         * @description Each message is one event: `id:` is the event id and `data:` the JSON body webhooks receive ({id, type, createdAt, data}). Without Last-Event-ID (header, or lastEventId in the query) the stream starts with the next event; with it, every event after that id comes first. A comment line is sent every 15 s to keep proxies from closing the connection. A client that leaves too much unread is disconnected (it resumes with Last-Event-ID); beyond STREAM_MAX_CLIENTS connections the answer is 503.
         */
        get: operations["streamAttributionEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Every webhook subscription */
        get: operations["listWebhooks"];
        put?: never;
        /**
         * Subscribe a URL to attribution events
         * @description Filters left out match everything. The answer carries the signing secret, once. URLs on link-local and cloud-metadata addresses are refused (400 webhook_url_refused), and so are loopback and private ones unless WEBHOOK_ALLOW_PRIVATE=1; a host name is judged by the addresses it resolves to, at subscription and at each delivery.
         */
        post: operations["createWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{id}/rotate-secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Replace the signing secret, with an overlap
         * @description Answers the new secret, once. Until previousSecretExpiresAt (overlapSeconds from now, default 86400) deliveries carry two signatures, one per secret, so receivers can switch without missing an event.
         */
        post: operations["rotateWebhookSecret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One webhook subscription */
        get: operations["getWebhook"];
        put?: never;
        post?: never;
        /** Delete a webhook subscription and its delivery log */
        delete: operations["deleteWebhook"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{id}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Latest delivery attempts, newest first */
        get: operations["listWebhookDeliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{id}/redeliver": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send the matching events again from an event id on
         * @description Enables a disabled subscription again and queues every matching event from fromEventId that the dispatcher has handed out, at most 10000 per call; later ones follow as usual. Go on from nextFromEventId when it is not null.
         */
        post: operations["redeliverWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/queues": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The BullMQ dashboard (read-only)
         * @description An HTML page showing the range-job queue; served when ADMIN_UI=1 and ADMIN_TOKEN is set.
         */
        get: operations["getQueueDashboard"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description Every error response has this shape. */
        Error: {
            error: {
                /**
                 * @description Stable snake_case error code.
                 * @example invalid_wallet_address
                 */
                code: string;
                /** @description What went wrong, in one sentence. */
                message: string;
            };
        };
        /** @description Whether the index holds every block of the asked range (fromBlock..toBlock, the whole chain when open). */
        Coverage: {
            /** @description False while a repair is open over the asked blocks: some of their rows may be missing until it closes. */
            complete: boolean;
            /** @description Block ranges being read again after a reorg or orphan mark (at most 100), oldest block first. */
            openRepairs: {
                fromBlock: number;
                toBlock: number;
                /**
                 * @description A reorg at the tip, or blocks found orphaned below it.
                 * @enum {string}
                 */
                reason: "reorg" | "orphaned";
                /** @description Its reads kept failing: no longer retried until the blocks are marked again (see codetrail_repairs_quarantined). */
                quarantined: boolean;
            }[];
        };
        Attribution: {
            chainId: number;
            /** @description Transaction carrying the suffix (the bundle transaction for a user operation). */
            txHash: string;
            /** @description ERC-4337 user operation hash; null for a plain transaction. */
            userOpHash: string | null;
            blockNumber: number;
            blockHash: string;
            /**
             * @description ISO 8601 date-time, UTC.
             * @example 2025-01-31T12:00:00.000Z
             */
            blockTimestamp: string;
            /**
             * @description Block time in milliseconds since the Unix epoch, as the node served it (timestampMs); null where it serves none.
             * @example 1738324800200
             */
            blockTimestampMs: number | null;
            /** @description Transaction sender (the bundler for a user operation). */
            from: string;
            to: string | null;
            /** @description The user operation's sender, else the transaction sender. */
            sender: string;
            builderCode: string;
            /** @description Schema 2: app (a), wallet (w) or service (s); x402 uses them for seller, facilitator and client. Null for schemas 0 and 1. */
            role: ("app" | "wallet" | "service") | null;
            /** @description The registry the suffix names for this code (schema 1, or schema 2’s r for the role). */
            registry: {
                address: string;
                /** @description Decimal: schema 1 allows up to 32 bytes. */
                chainId: string;
            } | null;
            /** @description Wallet that registered the code here; null when not registered here. */
            walletAddress: string | null;
            /** @description ERC-8021 schema id (0, 1 or 2). */
            schemaId: number;
            /** @description Every code of the suffix, in suffix order. */
            codes: string[];
            gasUsed: number | null;
            /** @enum {string} */
            status: "pending" | "confirmed" | "finalized";
            removed: boolean;
        };
        AttributionPage: {
            items: components["schemas"]["Attribution"][];
            /** @description Pass as cursor for the next page; null on the last page. */
            nextCursor: string | null;
            coverage: components["schemas"]["Coverage"];
        };
        /** @description The code on the BuilderCodes registry (BUILDER_CODES_REGISTRY), as its logs that are not removed say; null when not there. */
        RegistryCode: {
            /** @description ERC-721 token id, decimal. */
            tokenId: string;
            /** @description Current owner of the token; null when burnt. */
            owner: string | null;
            payoutAddress: string | null;
            registeredBlock: number;
            /**
             * @description ISO 8601 date-time, UTC.
             * @example 2025-01-31T12:00:00.000Z
             */
            registeredAt: string;
        } | null;
        BuilderCodeStats: {
            builderCode: string;
            walletAddress: string | null;
            registry: components["schemas"]["RegistryCode"];
            /** @enum {string} */
            interval: "hour" | "day";
            /**
             * @description Start of the first bucket: the requested since rounded down.
             * @example 2025-01-31T12:00:00.000Z
             */
            since: string;
            /**
             * @description End of the last bucket (exclusive): the requested until rounded up.
             * @example 2025-01-31T12:00:00.000Z
             */
            until: string;
            total: {
                /** @description Attributed transactions and user operations, not removed. */
                attributions: number;
                /** @description Of which confirmed or finalized. */
                confirmed: number;
                /** @description Of which still pre-confirmed. */
                pending: number;
                distinctSenders: number;
                /** @description Gas used by the attributed transactions where known, as a decimal string. */
                gasUsed: string;
                /** @description The attributions split by the role the code held (a code in two roles of one suffix counts in each); only roles with rows. */
                roles: {
                    /** @description Schema 2: app (a), wallet (w) or service (s); x402 uses them for seller, facilitator and client. Null for schemas 0 and 1. */
                    role: ("app" | "wallet" | "service") | null;
                    attributions: number;
                    confirmed: number;
                    pending: number;
                }[];
            };
            buckets: {
                /**
                 * @description Start of the UTC hour or day.
                 * @example 2025-01-31T12:00:00.000Z
                 */
                start: string;
                /** @description Attributed transactions and user operations, not removed. */
                attributions: number;
                /** @description Of which confirmed or finalized. */
                confirmed: number;
                /** @description Of which still pre-confirmed. */
                pending: number;
                distinctSenders: number;
                /** @description Gas used by the attributed transactions where known, as a decimal string. */
                gasUsed: string;
                /** @description The attributions split by the role the code held (a code in two roles of one suffix counts in each); only roles with rows. */
                roles: {
                    /** @description Schema 2: app (a), wallet (w) or service (s); x402 uses them for seller, facilitator and client. Null for schemas 0 and 1. */
                    role: ("app" | "wallet" | "service") | null;
                    attributions: number;
                    confirmed: number;
                    pending: number;
                }[];
            }[];
        };
        Leaderboard: {
            /**
             * @description The requested since rounded down to a UTC hour.
             * @example 2025-01-31T12:00:00.000Z
             */
            since: string;
            /**
             * @description The requested until rounded up to a UTC hour (exclusive).
             * @example 2025-01-31T12:00:00.000Z
             */
            until: string;
            items: {
                builderCode: string;
                walletAddress: string | null;
                /** @description Attributed transactions and user operations, not removed. */
                attributions: number;
                /** @description Of which confirmed or finalized. */
                confirmed: number;
                /** @description Of which still pre-confirmed. */
                pending: number;
                distinctSenders: number;
                /** @description Gas used by the attributed transactions where known, as a decimal string. */
                gasUsed: string;
                /** @description The attributions split by the role the code held (a code in two roles of one suffix counts in each); only roles with rows. */
                roles: {
                    /** @description Schema 2: app (a), wallet (w) or service (s); x402 uses them for seller, facilitator and client. Null for schemas 0 and 1. */
                    role: ("app" | "wallet" | "service") | null;
                    attributions: number;
                    confirmed: number;
                    pending: number;
                }[];
            }[];
        };
        BuilderCodeRegistration: {
            /**
             * @description A builder code as it appears in ERC-8021 suffixes.
             * @example bc_k3x9a2mf
             */
            builderCode: string;
            /**
             * @description The wallet, lowercase.
             * @example 0xd8da6bf26964af9d7eed9e03e53415d37aa96045
             */
            walletAddress: string;
        };
        BuilderCodeRecord: {
            /**
             * @description A builder code as it appears in ERC-8021 suffixes.
             * @example bc_k3x9a2mf
             */
            builderCode: string;
            walletAddress: string;
            /**
             * @description ISO 8601 date-time, UTC.
             * @example 2025-01-31T12:00:00.000Z
             */
            createdAt: string;
            /**
             * @description local: derived here; upstream: issued by BUILDER_API_URL.
             * @enum {string}
             */
            source: "local" | "upstream";
            /** @description How many of the wallet’s transactions carry its code. */
            coverage: {
                /** @description Mined state: nonce at latest vs confirmed and finalized attributions. */
                latest: {
                    /** @description The wallet's transaction count (nonce) at this block tag; null when the node did not answer. */
                    transactions: number | null;
                    /** @description The wallet's indexed transactions and user operations carrying its own code. */
                    attributed: number;
                };
                /** @description Including pre-confirmed state: pending nonce vs every attribution not removed. */
                pending: {
                    /** @description The wallet's transaction count (nonce) at this block tag; null when the node did not answer. */
                    transactions: number | null;
                    /** @description The wallet's indexed transactions and user operations carrying its own code. */
                    attributed: number;
                };
            };
        };
        BuilderCode: {
            /**
             * @description A builder code as it appears in ERC-8021 suffixes.
             * @example bc_k3x9a2mf
             */
            builderCode: string;
            /**
             * @description Known from at least one source.
             * @constant
             */
            registered: true;
            /**
             * @description registry: on the BuilderCodes registry (wins when several know it); api: issued by BUILDER_API_URL; local: derived here.
             * @enum {string}
             */
            source: "registry" | "api" | "local";
            /** @description Wallet the code was issued to through the registration API; null for a code known only on-chain. */
            walletAddress: string | null;
            /** @description When the code was issued through the API; null for a code known only on-chain. */
            createdAt: string | null;
            registry: components["schemas"]["RegistryCode"];
        };
        Readiness: {
            ready: boolean;
            /** @description Present when not ready (503). */
            error?: {
                code: string;
                message: string;
            };
            checks: {
                database: {
                    /** @enum {string} */
                    status: "ok" | "down" | "not_configured";
                    latencyMs: number | null;
                    /** @description Why the check failed: an error code or "timeout". */
                    error: string | null;
                };
                redis: {
                    /** @enum {string} */
                    status: "ok" | "down" | "not_configured";
                    latencyMs: number | null;
                    /** @description Why the check failed: an error code or "timeout". */
                    error: string | null;
                };
                node: {
                    /** @enum {string} */
                    status: "ok" | "down" | "not_configured";
                    latencyMs: number | null;
                    /** @description Why the check failed: an error code or "timeout". */
                    error: string | null;
                };
            };
            sync: {
                chainId: number;
                /** @description The node's latest block. */
                headBlock: number | null;
                /** @description The last block the live follower stored. */
                indexedBlock: number | null;
                lagBlocks: number | null;
                /** @description Head block time minus indexed block time. */
                lagSeconds: number | null;
                /** @description Milliseconds between blocks, as last measured from the node (null before the first probe). */
                blockTimeMs: number | null;
                /** @description Whether the chain pre-confirms through `pending` (the node's probe, or PRECONFIRMATIONS); when not, no pending rows are written. */
                preconfirmations: {
                    enabled: boolean;
                    /** @enum {string} */
                    source: "probe" | "config";
                } | null;
            };
        };
        SyncStatus: {
            chainId: number;
            /** @description The node's latest block (as the follower last saw it when the node does not answer). */
            headBlock: number | null;
            /** @description The last block the live follower stored. */
            indexedBlock: number | null;
            /** @description Block time of indexedBlock. */
            indexedAt: string | null;
            finalizedBlock: number | null;
            lagBlocks: number | null;
            /** @description Head block time minus indexed block time. */
            lagSeconds: number | null;
            /** @description Pre-confirmed logs first stored in the last 10 s, per second; null on a chain without pre-confirmations. */
            pendingLogsPerSecond: number | null;
            reorgsLastHour: number;
            /** @description Attributed, confirmed transactions whose gas used is not filled yet: range jobs leave it to a follow-up job, so a backfill's tail shows here until its receipts are read. */
            gasUsedMissing: number;
            /** @description What is kept of raw history. Attributions, their transactions, the rollups and the registry logs are always kept. */
            retention: {
                /** @description RETENTION_LOGS_DAYS: finalized raw logs and unattributed transactions older than this are deleted; null keeps everything. */
                logsDays: number | null;
                /** @description Block time of the oldest log kept; null while none is stored. */
                logsSince: string | null;
            };
            /** @description Milliseconds between blocks, as last measured from the node (null before the first probe). */
            blockTimeMs: number | null;
            /** @description Whether the chain pre-confirms through `pending` (the node's probe, or PRECONFIRMATIONS); when not, no pending rows are written. */
            preconfirmations: {
                enabled: boolean;
                /** @enum {string} */
                source: "probe" | "config";
            } | null;
            /** @description The read replica (DATABASE_READ_URL), measured every second; null when none is configured. */
            readReplica: {
                /**
                 * @description serving: reads go to the replica; lagging or down: to the primary until it catches up.
                 * @enum {string}
                 */
                state: "serving" | "lagging" | "down";
                /** @description How far the replica trails the primary, in ms; null while it cannot be measured. */
                lagMs: number | null;
                /** @description READ_MAX_LAG_MS: beyond this the replica is bypassed. */
                maxLagMs: number;
                checkedAt: string | null;
            } | null;
            /** @description Every chain this deployment indexes, as its head follower last saw it (analytics.chains). */
            chains: {
                chainId: number;
                /** @description The chain's name in the config file; null for a chain configured through the environment. */
                name: string | null;
                headBlock: number | null;
                indexedBlock: number | null;
                finalizedBlock: number | null;
                lagBlocks: number | null;
                /** @description The chain's RPC endpoints as this process's node client sees them (each asked eth_chainId at start, after a failure and every few seconds); null for a chain with one endpoint, or one this process runs no node client for. */
                endpoints: {
                    /** @description Scheme, host and port: never a key. */
                    url: string;
                    weight: number;
                    /** @description Its latest block at the last look. */
                    head: number | null;
                    /**
                     * @description serving: in rotation; resting: failed, probed back in; lagging: behind the best head; refused: its key was refused (401/403); wrong_chain: it says another chain id than the configured one.
                     * @enum {string}
                     */
                    state: "serving" | "resting" | "lagging" | "refused" | "wrong_chain";
                    /** @description What it answered eth_chainId since its last failure; null until it answers. */
                    chainId: number | null;
                    lastError: string | null;
                }[] | null;
            }[];
        };
        Log: {
            chainId: number;
            address: string;
            topics: string[];
            data: string;
            blockNumber: number;
            /** @description 32 zero bytes while the log is pending. */
            blockHash: string;
            /**
             * @description ISO 8601 date-time, UTC.
             * @example 2025-01-31T12:00:00.000Z
             */
            blockTimestamp: string;
            /**
             * @description Block time in milliseconds since the Unix epoch, as the node served it (timestampMs); null where it serves none.
             * @example 1738324800200
             */
            blockTimestampMs: number | null;
            transactionHash: string;
            transactionIndex: number;
            logIndex: number;
            /** @enum {string} */
            status: "pending" | "confirmed" | "finalized";
            removed: boolean;
        };
        LogPage: {
            items: components["schemas"]["Log"][];
            /** @description Pass as cursor for the next page; null on the last page. */
            nextCursor: string | null;
            coverage: components["schemas"]["Coverage"];
        };
        Erc8021Suffix: {
            /** @description ERC-8021 schema id; null when unreadable. */
            schemaId: number | null;
            /** @description Valid codes of the suffix, in order; empty when malformed. */
            codes: string[];
            /** @description Schema 1: the custom code registry. */
            registry: {
                address: string;
                /** @description Decimal chain id of the registry. */
                chainId: string;
                /** @description Whether every code is registered there (from the registry's indexed events where its chain indexes it, else `isRegistered` on that chain's node); null when unknown. */
                verified: boolean | null;
                /** @description Why `verified` is null: `chain_not_configured` (the registry's chain is not indexed here), `node_error` (its node did not answer; asked again later), `invalid_answer` (no registry answered at that address; asked again later), `registry_reorg` (a reorg of the registry's chain removed a registration it was verified against; asked again). Null when `verified` is known. */
                unverifiedReason: ("chain_not_configured" | "node_error" | "invalid_answer" | "registry_reorg") | null;
            } | null;
            /** @description Schema 2: every CBOR field (app, wallet, service codes, registries, metadata). */
            cbor: {
                [key: string]: unknown;
            } | null;
            /** @description Why the suffix could not be read; null when it was. */
            malformedReason: string | null;
        };
        TransactionAttribution: {
            chainId: number;
            hash: string;
            blockNumber: number;
            blockHash: string;
            /**
             * @description ISO 8601 date-time, UTC.
             * @example 2025-01-31T12:00:00.000Z
             */
            blockTimestamp: string;
            /**
             * @description Block time in milliseconds since the Unix epoch, as the node served it (timestampMs); null where it serves none.
             * @example 1738324800200
             */
            blockTimestampMs: number | null;
            transactionIndex: number;
            from: string;
            to: string | null;
            /** @description Calldata size in bytes. */
            inputSize: number;
            gasUsed: number | null;
            /** @description ERC-4337 user operations found in the calldata. */
            userOperations: number;
            /** @enum {string} */
            status: "pending" | "confirmed" | "finalized";
            removed: boolean;
            /** @description The transaction's own ERC-8021 suffix; null when its calldata has none. */
            suffix: components["schemas"]["Erc8021Suffix"] | null;
            /** @description Codes matched from the transaction and its user operations. */
            attributions: {
                /** @description The user operation whose callData carried the code; null for the transaction itself. */
                userOpHash: string | null;
                sender: string;
                builderCode: string;
                /** @description Wallet that registered the code here; null when not registered here. */
                walletAddress: string | null;
                schemaId: number;
                codes: string[];
                /** @enum {string} */
                status: "pending" | "confirmed" | "finalized";
                removed: boolean;
            }[];
        };
        WebhookSubscription: {
            id: string;
            url: string;
            events: string[];
            builderCodes: string[] | null;
            walletAddresses: string[] | null;
            roles: string[] | null;
            chainIds: number[] | null;
            /**
             * @description ISO 8601 date-time, UTC.
             * @example 2025-01-31T12:00:00.000Z
             */
            createdAt: string;
            /** @enum {string} */
            status: "active" | "failing" | "disabled";
            consecutiveFailures: number;
            disabledAt: string | null;
            /** @description Why deliveries stopped; POST redeliver enables it again. */
            disabledReason: string | null;
        };
        CreatedWebhookSubscription: {
            id: string;
            url: string;
            events: string[];
            builderCodes: string[] | null;
            walletAddresses: string[] | null;
            roles: string[] | null;
            chainIds: number[] | null;
            /**
             * @description ISO 8601 date-time, UTC.
             * @example 2025-01-31T12:00:00.000Z
             */
            createdAt: string;
            /** @enum {string} */
            status: "active" | "failing" | "disabled";
            consecutiveFailures: number;
            disabledAt: string | null;
            /** @description Why deliveries stopped; POST redeliver enables it again. */
            disabledReason: string | null;
            /** @description Signing secret: shown once, here. */
            secret: string;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    getHealth: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @enum {string} */
                        status: "ok";
                    };
                };
            };
            /** @description Default Response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getReadiness: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Readiness"];
                };
            };
            /** @description Default Response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Readiness"];
                };
            };
        };
    };
    getStatus: {
        parameters: {
            query?: {
                /** @description The chain's EIP-155 id; default: the deployment's first configured chain. */
                chainId?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SyncStatus"];
                };
            };
            /** @description Default Response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getMetrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Prometheus text exposition format. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Default Response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": components["schemas"]["Error"];
                };
            };
        };
    };
    registerBuilderCode: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * @description Wallet address; any letter case (mixed case must be a valid EIP-55 checksum).
                     * @example 0xd8da6bf26964af9d7eed9e03e53415d37aa96045
                     */
                    walletAddress: string;
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BuilderCodeRegistration"];
                };
            };
            /** @description Default Response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getBuilderCode: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Wallet address; any letter case (mixed case must be a valid EIP-55 checksum). */
                walletAddress: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BuilderCodeRecord"];
                };
            };
            /** @description Default Response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getBuilderCodeRecord: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description A builder code as it appears in ERC-8021 suffixes. */
                code: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BuilderCode"];
                };
            };
            /** @description Default Response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listAttributions: {
        parameters: {
            query?: {
                /** @description The chain's EIP-155 id; default: the deployment's first configured chain. */
                chainId?: string;
                /** @description A builder code as it appears in ERC-8021 suffixes. */
                builderCode?: string;
                /** @description Wallet address; any letter case (mixed case must be a valid EIP-55 checksum). */
                walletAddress?: string;
                /** @description Block number, decimal or 0x-prefixed hex. */
                fromBlock?: string;
                /** @description Block number, decimal or 0x-prefixed hex. */
                toBlock?: string;
                /** @description Block time at or after (ISO 8601). */
                since?: string;
                /** @description Block time before (ISO 8601). */
                until?: string;
                /** @description Comma-separated statuses: pending, confirmed, finalized. Default: all. */
                status?: string | string[];
                /** @description Only codes in this schema-2 role. */
                role?: "app" | "wallet" | "service";
                /** @description Also return rows orphaned by a reorg or dropped while pending. Default false. */
                includeRemoved?: "0" | "1" | "true" | "false";
                /** @description Page size, 1 to 1000. Default 100. */
                limit?: string;
                /** @description nextCursor of the previous page. */
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AttributionPage"];
                };
            };
            /** @description Default Response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getBuilderCodeStats: {
        parameters: {
            query?: {
                /** @description The chain's EIP-155 id, or all: every chain this deployment serves, summed (a sender counts once per chain it sent from; the wallet and registry record named are the first configured chain's). Default: the deployment's first configured chain. */
                chainId?: string;
                /** @description ISO 8601 date or date-time with a time zone. */
                since?: string;
                /** @description ISO 8601 date or date-time with a time zone. */
                until?: string;
                /** @description Bucket size. Default day. */
                interval?: "hour" | "day";
            };
            header?: never;
            path: {
                /** @description A builder code as it appears in ERC-8021 suffixes. */
                code: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BuilderCodeStats"];
                };
            };
            /** @description Default Response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getLeaderboard: {
        parameters: {
            query?: {
                /** @description The chain's EIP-155 id, or all: every chain this deployment serves, summed (a sender counts once per chain it sent from; the wallet and registry record named are the first configured chain's). Default: the deployment's first configured chain. */
                chainId?: string;
                /** @description ISO 8601 date or date-time with a time zone. */
                since?: string;
                /** @description ISO 8601 date or date-time with a time zone. */
                until?: string;
                /** @description Page size, 1 to 1000. Default 100. */
                limit?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Leaderboard"];
                };
            };
            /** @description Default Response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getTransactionAttribution: {
        parameters: {
            query?: {
                /** @description The chain's EIP-155 id; default: the deployment's first configured chain. */
                chainId?: string;
            };
            header?: never;
            path: {
                hash: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TransactionAttribution"];
                };
            };
            /** @description Default Response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listLogs: {
        parameters: {
            query?: {
                /** @description The chain's EIP-155 id; default: the deployment's first configured chain. */
                chainId?: string;
                /** @description Comma-separated contract addresses. */
                address?: string | string[];
                /** @description Comma-separated values, any of which topic 0 may equal (eth_getLogs semantics). */
                topic0?: string | string[];
                /** @description Comma-separated values, any of which topic 1 may equal (eth_getLogs semantics). */
                topic1?: string | string[];
                /** @description Comma-separated values, any of which topic 2 may equal (eth_getLogs semantics). */
                topic2?: string | string[];
                /** @description Comma-separated values, any of which topic 3 may equal (eth_getLogs semantics). */
                topic3?: string | string[];
                /** @description Block number, decimal or 0x-prefixed hex. */
                fromBlock?: string;
                /** @description Block number, decimal or 0x-prefixed hex. */
                toBlock?: string;
                /** @description Comma-separated statuses: pending, confirmed, finalized. Default: all. */
                status?: string | string[];
                /** @description Also return rows orphaned by a reorg or dropped while pending. Default false. */
                includeRemoved?: "0" | "1" | "true" | "false";
                /** @description Page size, 1 to 1000. Default 100. */
                limit?: string;
                /** @description nextCursor of the previous page. */
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LogPage"];
                };
            };
            /** @description Default Response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    streamAttributionEvents: {
        parameters: {
            query?: {
                builderCode?: string | string[];
                walletAddress?: string | string[];
                /** @description Comma-separated chain ids. Default: every chain. */
                chainId?: string | string[];
                /** @description Comma-separated event types. Default: all. */
                events?: string | string[];
                /** @description Resume after this event id (the `id:` of the last message received). */
                lastEventId?: string;
            };
            header?: {
                /** @description Resume after this event id (the `id:` of the last message received). */
                "last-event-id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The event stream, open until the client leaves. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            /** @description Default Response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listWebhooks: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        items: components["schemas"]["WebhookSubscription"][];
                    };
                };
            };
            /** @description Default Response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * @description Where events are POSTed.
                     * @example https://example.com/codetrail
                     */
                    url: string;
                    events: ("attribution.pending" | "attribution.confirmed" | "attribution.finalized" | "attribution.removed")[];
                    builderCodes?: string[];
                    walletAddresses?: string[];
                    roles?: ("app" | "wallet" | "service")[];
                    /** @description Only events of these chains. Default: every chain. */
                    chainIds?: number[];
                };
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CreatedWebhookSubscription"];
                };
            };
            /** @description Default Response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    rotateWebhookSecret: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    overlapSeconds?: number;
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        secret: string;
                        /**
                         * @description ISO 8601 date-time, UTC.
                         * @example 2025-01-31T12:00:00.000Z
                         */
                        previousSecretExpiresAt: string;
                    };
                };
            };
            /** @description Default Response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookSubscription"];
                };
            };
            /** @description Default Response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    deleteWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Default Response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listWebhookDeliveries: {
        parameters: {
            query?: {
                limit?: string;
            };
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        items: {
                            eventId: string;
                            ok: boolean;
                            httpStatus: number | null;
                            error: string | null;
                            durationMs: number;
                            /**
                             * @description ISO 8601 date-time, UTC.
                             * @example 2025-01-31T12:00:00.000Z
                             */
                            createdAt: string;
                        }[];
                    };
                };
            };
            /** @description Default Response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    redeliverWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    fromEventId: string | number;
                };
            };
        };
        responses: {
            /** @description Default Response */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        queued: number;
                        nextFromEventId: string | null;
                    };
                };
            };
            /** @description Default Response */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getQueueDashboard: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The dashboard page. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/html": string;
                };
            };
            /** @description Default Response */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Default Response */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
}
