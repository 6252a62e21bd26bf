import { encodeDeployData, type Address } from 'viem'
import type { Devnet } from '../../harness/devnet/index.js'
import { fixtureClient, rawSignedTx, type Artifact } from '../../harness/fixtures/chain.js'

/** Deploys a contract on a devnet that mines only on request (`blockTimeMs: 0`): send, mine, read the receipt. */
export async function deployOnDevnet(devnet: Devnet, artifact: Artifact): Promise<Address> {
  const client = fixtureClient(devnet.url)
  const deploy = await rawSignedTx(devnet.url, {
    from: 0,
    data: encodeDeployData({ abi: artifact.abi, bytecode: artifact.bytecode }),
    gas: 3_000_000n,
  })
  const hash = await client.sendRawTransaction({ serializedTransaction: deploy })
  await devnet.mine()
  // From anvil itself: a devnet whose canonical chain lags has no receipt for it yet.
  return (await fixtureClient(devnet.anvilUrl).getTransactionReceipt({ hash })).contractAddress!
}
