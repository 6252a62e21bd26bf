/** The JSON API of this same origin, as the dashboard reads it: paths and bodies typed from openapi.json. */
import createClient from 'openapi-fetch'
import type { components, paths } from '../client/openapi'

export { answer, BuilderCodeClientError } from '../client/client.js'

type Schemas = components['schemas']
export type Leaderboard = Schemas['Leaderboard']
/** Attributions of a code per ERC-8021 role (schema 2: app, wallet, service; null for schemas 0 and 1). */
export type RoleCounts = Leaderboard['items'][number]['roles'][number]
export type Status = Schemas['Attribution']['status']
export type Registration = Schemas['BuilderCodeRegistration']

/** Same origin: requests go to the host that served the dashboard. */
export const api = createClient<paths>({ headers: { accept: 'application/json' } })

/**
 * The chain the visitor picked: a chain id, `all` (every chain summed), or null for the deployment's
 * first configured chain (the API's default).
 */
export type ChainChoice = number | 'all' | null
let chosenChain: ChainChoice = null
export const chainChoice = () => chosenChain
export const chooseChain = (chainId: ChainChoice) => {
  chosenChain = chainId
}
/** The reads that sum every chain with `chainId=all`: the leaderboard and a code's stats. */
const readsAllChains = (path: string) => path === '/v1/leaderboard' || /^\/v1\/builder-codes\/[^/]+\/stats$/.test(path)
/**
 * Every read names the picked chain, so each page shows that chain's figures without passing it around;
 * with all chains picked, the reads that can sum them do, and the others read the default chain.
 */
api.use({
  onRequest({ request }) {
    if (chosenChain === null || request.method !== 'GET') return undefined
    const url = new URL(request.url)
    if (chosenChain === 'all' && !readsAllChains(url.pathname)) return undefined
    url.searchParams.set('chainId', String(chosenChain))
    return new Request(url, request)
  },
})
/** A same-origin path with the picked chain in its query, for requests made outside `api` (the event stream of every chain when all are picked). */
export const withChain = (path: string) =>
  chosenChain === null || chosenChain === 'all' ? path : `${path}${path.includes('?') ? '&' : '?'}chainId=${chosenChain}`

export const codePath = (code: string) => `/codes/${encodeURIComponent(code)}`
export const transactionPath = (hash: string) => `/v1/transactions/${hash}/attribution`
