/**
 * The demo chain's starting state: two tokens, a swap pool between them and the ERC-4337 EntryPoints,
 * agents funded and approved, built on an automining anvil in a second or two and saved with
 * `--dump-state`. The devnet then starts from that state: anvil 1.7 cannot simulate contract
 * creations in its pool, and with 2 s blocks the same setup would take half a minute.
 */
import { encodeFunctionData, maxUint256, type Address, type Hex } from 'viem'
import { startAnvil, type Anvil } from '../devnet/index.js'
import { anvilAccount, artifacts, deployContract, loadArtifact, sendWithSuffix } from '../fixtures/chain.js'
import { createSmartAccount, deployEntryPoints, ENTRY_POINT_VERSIONS, type SmartAccount } from '../fixtures/entryPoint.js'

export const swapArtifact = loadArtifact('Swap')
const builderCodesArtifact = loadArtifact('BuilderCodes')

/** anvil accounts that act as agents sending plain transactions. */
export const EOA_AGENT_ACCOUNTS = [1, 2, 3, 4, 5] as const
/** The agent whose transactions the demo drops from the pool before they are mined. */
export const DROPPED_AGENT_ACCOUNT = 6
/** Owns the agents' smart accounts (one per EntryPoint version). */
const SMART_ACCOUNT_OWNER = 8
/** Sends the `handleOps` bundles. */
export const BUNDLER_ACCOUNT = 9

const DEPLOYER = 0
// The EntryPoints go out from an account of their own, in parallel with the tokens' setup.
const ENTRY_POINT_DEPLOYER = 7
/** Deploys the BuilderCodes registry, and registers the schema-1 agent's code on it while the demo runs. */
const REGISTRY_DEPLOYER = DEPLOYER
/** The demo tokens have 18 decimals. */
export const TOKEN_UNIT = 10n ** 18n
const AGENT_BALANCE = 1_000_000n * TOKEN_UNIT
const POOL_LIQUIDITY = 100_000n * TOKEN_UNIT

/** The EntryPoints sit at their canonical addresses (`ENTRY_POINT_ADDRESSES`). */
export type DemoContracts = {
  tokens: readonly [Address, Address]
  swap: Address
}

export type DemoChainState = {
  contracts: DemoContracts
  smartAccounts: SmartAccount[]
  /** A BuilderCodes registry (indexed from block 0): an agent's code registered there is named by its schema-1 suffixes. */
  registry: Address
}

/** Calldata of a demo token call. */
export const tokenCall = (functionName: 'mint' | 'transfer' | 'approve', args: readonly unknown[]): Hex =>
  encodeFunctionData({ abi: artifacts.Token.abi, functionName, args })

/** Mints `account` its tokens and lets the pool spend them, one transaction after another. */
async function fundAgent(url: string, contracts: { tokens: readonly Address[]; swap: Address }, account: number): Promise<void> {
  const address = anvilAccount(account).address
  for (const token of contracts.tokens) {
    await sendWithSuffix(url, { from: account, to: token, data: tokenCall('mint', [address, AGENT_BALANCE]) })
    await sendWithSuffix(url, { from: account, to: token, data: tokenCall('approve', [contracts.swap, maxUint256]) })
  }
}

/** Registers `code` on the BuilderCodes registry `registry` of the devnet at `url`, owned by and paying `owner`. */
export async function registerBuilderCode(url: string, registry: Address, code: string, owner: Address): Promise<void> {
  const data = encodeFunctionData({ abi: builderCodesArtifact.abi, functionName: 'register', args: [code, owner, owner] })
  await sendWithSuffix(url, { from: REGISTRY_DEPLOYER, to: registry, data })
}

/**
 * Builds the starting state on a throwaway automining anvil and writes it to `stateFile`
 * (anvil dumps it when it stops); start the devnet with `loadState: stateFile`.
 */
export async function prepareChainState(stateFile: string, chainId: number, onStart?: (anvil: Anvil) => void): Promise<DemoChainState> {
  const anvil = await startAnvil({ dumpState: stateFile, chainId })
  onStart?.(anvil)
  try {
    const url = anvil.url
    const tokenA = await deployContract(url, artifacts.Token, ['Demo Dollar', 'DUSD'], DEPLOYER)
    const tokenB = await deployContract(url, artifacts.Token, ['Demo Ether', 'DETH'], DEPLOYER)
    const swap = await deployContract(url, swapArtifact, [tokenA, tokenB], DEPLOYER)
    const pool = { tokens: [tokenA, tokenB] as const, swap }
    // Before the deployer's funding below: one account's transactions go out one after another.
    const registry = await deployContract(url, builderCodesArtifact, [], REGISTRY_DEPLOYER)
    await Promise.all([
      deployEntryPoints(url, ENTRY_POINT_DEPLOYER),
      fundAgent(url, pool, DEPLOYER).then(() =>
        sendWithSuffix(url, {
          from: DEPLOYER,
          to: swap,
          data: encodeFunctionData({ abi: swapArtifact.abi, functionName: 'addLiquidity', args: [POOL_LIQUIDITY, POOL_LIQUIDITY] }),
        }),
      ),
      ...EOA_AGENT_ACCOUNTS.map((account) => fundAgent(url, pool, account)),
    ])
    const smartAccounts = await Promise.all(
      ENTRY_POINT_VERSIONS.map((version) => createSmartAccount(url, { version, owner: SMART_ACCOUNT_OWNER })),
    )
    return { contracts: pool, smartAccounts, registry }
  } finally {
    await anvil.stop()
  }
}
