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

export const codePath = (code: string) => `/codes/${encodeURIComponent(code)}`
export const transactionPath = (hash: string) => `/v1/transactions/${hash}/attribution`
