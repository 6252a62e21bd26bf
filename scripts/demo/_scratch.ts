import { createDevnet, startAnvil } from '../../src/devnet/index.js'
import { anvilAccount, fixtureClient, sendWithSuffix, deployContract, artifacts } from '../../test/fixtures/chain.js'
import { deployEntryPoints } from '../../test/fixtures/entryPoint.js'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const state = join(tmpdir(), 'scratch-state.json')
let t = Date.now()
const setup = await startAnvil({ dumpState: state })
const token = await deployContract(setup.url, artifacts.Token, ['A', 'A'], 0)
await deployEntryPoints(setup.url, 1)
console.log('setup ms', Date.now() - t, token)
await setup.stop()
t = Date.now()
const devnet = await createDevnet({ blockTimeMs: 2000, loadState: state, extraArgs: ['--slots-in-an-epoch', '4'] })
console.log('devnet ms', Date.now() - t)
const c = fixtureClient(devnet.url)
console.log('head', await c.getBlockNumber(), 'code', (await c.getCode({ address: token }))?.length)
console.log('finalized', (await c.getBlock({ blockTag: 'finalized' })).number)
// send 3 txs from acct 2
const hashes = []
for (let i = 0; i < 3; i++) hashes.push(await sendWithSuffix(devnet.url, { from: 2, to: token, data: '0x', gas: 100000n, wait: false }))
console.log('pending nonce', await c.getTransactionCount({ address: anvilAccount(2).address, blockTag: 'pending' }))
await new Promise(r => setTimeout(r, 2500))
const head = await c.getBlock({ blockTag: 'latest', includeTransactions: false })
console.log('head', head.number, head.transactions.length)
const raw = await c.request({ method: 'eth_getRawTransactionByHash' as any, params: [head.transactions[0]] as any })
console.log('raw', String(raw).slice(0, 20))
for (let i = 0; i < 2; i++) hashes.push(await sendWithSuffix(devnet.url, { from: 2, to: token, data: '0x', gas: 100000n, wait: false }))
const raws = await Promise.all(head.transactions.map(h => c.request({ method: 'eth_getRawTransactionByHash' as any, params: [h] as any })))
const r = await devnet.reorg(1, raws.map(tx => ({ transaction: tx as any, blockOffset: 0 })))
console.log('reorged', r.number, r.hash, 'old', head.hash)
const nb = await c.getBlock({ blockTag: 'latest' })
console.log('new head txs', nb.transactions.length, nb.timestamp, head.timestamp)
console.log('pending nonce', await c.getTransactionCount({ address: anvilAccount(2).address, blockTag: 'pending' }), 'latest', await c.getTransactionCount({ address: anvilAccount(2).address }))
await new Promise(r => setTimeout(r, 2500))
const nb2 = await c.getBlock({ blockTag: 'latest' })
console.log('after mine', nb2.number, nb2.transactions.length)
await devnet.stop()
