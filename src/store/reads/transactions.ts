import { and, asc, eq } from 'drizzle-orm'
import type { Database } from '../client.js'
import { attributions, builderCodes, transactionKeys, transactions } from '../schema.js'

/**
 * A stored transaction with its decoded suffix and the attributions made from it (the tx's own and its user
 * operations'). Its key names its block time, so each table is read in that one month.
 */
export async function getTransactionAttribution(db: Database, chainId: number, hash: string) {
  // A value the plan takes at run time (not a join the planner may turn into a filter on `hash` in every month),
  // so the months other than the key's are pruned before they are read.
  const keyTime = db
    .select({ blockTimestamp: transactionKeys.blockTimestamp })
    .from(transactionKeys)
    .where(and(eq(transactionKeys.chainId, chainId), eq(transactionKeys.hash, hash)))
  const [transaction] = await db
    .select({
      hash: transactions.hash,
      blockNumber: transactions.blockNumber,
      blockHash: transactions.blockHash,
      blockTimestamp: transactions.blockTimestamp,
      blockTimestampMs: transactions.blockTimestampMs,
      transactionIndex: transactions.transactionIndex,
      fromAddress: transactions.fromAddress,
      toAddress: transactions.toAddress,
      inputSize: transactions.inputSize,
      hasSuffix: transactions.hasSuffix,
      schemaId: transactions.schemaId,
      codes: transactions.codes,
      registryAddress: transactions.registryAddress,
      registryChainId: transactions.registryChainId,
      registryVerified: transactions.registryVerified,
      registryUnverifiedReason: transactions.registryUnverifiedReason,
      cbor: transactions.cbor,
      malformedReason: transactions.malformedReason,
      userOperations: transactions.userOperations,
      gasUsed: transactions.gasUsed,
      status: transactions.status,
      removed: transactions.removed,
    })
    .from(transactions)
    .where(and(eq(transactions.chainId, chainId), eq(transactions.hash, hash), eq(transactions.blockTimestamp, keyTime)))
  if (!transaction) return null
  const matches = await db
    .select({
      userOpHash: attributions.userOpHash,
      builderCode: attributions.builderCode,
      codeIndex: attributions.codeIndex,
      sender: attributions.sender,
      schemaId: attributions.schemaId,
      codes: attributions.codes,
      walletAddress: builderCodes.walletAddress,
      status: attributions.status,
      removed: attributions.removed,
    })
    .from(attributions)
    .leftJoin(builderCodes, and(eq(builderCodes.chainId, attributions.chainId), eq(builderCodes.builderCode, attributions.builderCode)))
    .where(
      and(eq(attributions.chainId, chainId), eq(attributions.txHash, hash), eq(attributions.blockTimestamp, transaction.blockTimestamp)),
    )
    .orderBy(asc(attributions.userOpHash), asc(attributions.codeIndex))
  return { transaction, matches }
}
