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

/** The chain the visitor picked; null reads the deployment's first configured chain (the API's default). */
let chosenChain: number | null = null
export const chainChoice = () => chosenChain
export const chooseChain = (chainId: number | null) => {
  chosenChain = chainId
}
/** Every read names the picked chain, so each page shows that chain's figures without passing it around. */
api.use({
  onRequest({ request }) {
    if (chosenChain === null || request.method !== 'GET') return undefined
    const url = new URL(request.url)
    url.searchParams.set('chainId', String(chosenChain))
    return new Request(url, request)
  },
})
/** A same-origin path with the picked chain in its query, for requests made outside `api` (the event stream). */
export const withChain = (path: string) => (chosenChain === null ? path : `${path}${path.includes('?') ? '&' : '?'}chainId=${chosenChain}`)

export const codePath = (code: string) => `/codes/${encodeURIComponent(code)}`
export const transactionPath = (hash: string) => `/v1/transactions/${hash}/attribution`
