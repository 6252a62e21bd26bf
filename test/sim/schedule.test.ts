import { describe, expect, it } from 'vitest'
import { chainOf, createSchedule, EIP7702_ACCOUNT, seedFeatures, type Action } from './schedule.js'

const SEEDS = Array.from({ length: 70 }, (_, i) => i + 1)

describe("the seeded simulation's plan", () => {
  it('is a pure function of the seed', () => {
    for (const seed of SEEDS) expect(createSchedule(seed)).toEqual(createSchedule(seed))
  })

  it('gives seeds ≡ 3 (mod 7) a second chain of the other profile, with its own traffic, reorgs and registry calls', () => {
    // The default seeds (1–10) include two-chain seeds, one of each profile first.
    expect(SEEDS.filter((seed) => seedFeatures(seed).twoChains && seed <= 10)).toEqual([3, 10])
    for (const seed of SEEDS) {
      const schedule = createSchedule(seed)
      const onSecond = schedule.actions.filter((action) => chainOf(action) === 1)
      if (!schedule.twoChains) {
        expect(schedule.second).toBeUndefined()
        expect(onSecond).toEqual([])
        expect(schedule.backfills.every((backfill) => backfill.chain === undefined)).toBe(true)
        continue
      }
      expect(schedule.second!.chain.profile).not.toBe(schedule.chain.profile)
      expect(onSecond.map((action) => action.type)).toEqual(expect.arrayContaining(['blocks', 'reorg', 'registry']))
      // Last: blocks on the second chain with a suffixed user operation of the EIP-7702 account.
      const last = schedule.actions.at(-1) as Extract<Action, { type: 'blocks' }>
      expect([last.type, chainOf(last)]).toEqual(['blocks', 1])
      expect(last.blocks[0]!.bundle!.ops[0]!.account).toBe(EIP7702_ACCOUNT)
      expect(schedule.gapsMs).toHaveLength(schedule.actions.length)
    }
  })

  it('never parts a crash point from the action that reaches it', () => {
    for (const seed of SEEDS) {
      const { actions } = createSchedule(seed)
      actions.forEach((action, i) => {
        if (action.type !== 'crash') return
        const next = actions[i + 1]!
        const reaches =
          action.point === 'reorg-marked'
            ? next.type === 'reorg'
            : action.point === 'tip-stored'
              ? next.type === 'blocks'
              : action.point === 'pending-stored'
                ? next.type === 'pending'
                : action.point === 'repairs-enqueued'
                  ? next.type === 'reorg'
                  : next.type === 'start-backfill'
        expect(reaches, `seed ${seed} action ${i} (${action.point}) then ${next.type}`).toBe(true)
      })
    }
  })
})
