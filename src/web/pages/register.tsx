import { useState } from 'preact/hooks'
import { answer, api, codePath, type Registration } from '../api.js'
import { describeError, PageHeading } from '../components/common.js'

type Outcome = { kind: 'registered'; registration: Registration } | { kind: 'error'; message: string }

export function Register() {
  const [wallet, setWallet] = useState('')
  const [busy, setBusy] = useState(false)
  const [outcome, setOutcome] = useState<Outcome | undefined>()
  const submit = async (event: SubmitEvent) => {
    event.preventDefault()
    setBusy(true)
    try {
      const registration = await answer(api.POST('/v1/agents/builder-codes', { body: { walletAddress: wallet.trim() } }))
      setOutcome({ kind: 'registered', registration })
    } catch (error) {
      setOutcome({ kind: 'error', message: describeError(error) })
    } finally {
      setBusy(false)
    }
  }
  return (
    <>
      <PageHeading>Register a wallet</PageHeading>
      <p>An agent's wallet gets one builder code, the same every time it asks; transactions ending with it are attributed to the wallet.</p>
      <form class="register" onSubmit={submit} aria-describedby="wallet-hint">
        <label for="wallet">Wallet address</label>
        <input
          id="wallet"
          name="walletAddress"
          type="text"
          inputMode="text"
          autoComplete="off"
          spellcheck={false}
          placeholder="0x…"
          required
          value={wallet}
          aria-invalid={outcome?.kind === 'error'}
          aria-errormessage={outcome?.kind === 'error' ? 'register-error' : undefined}
          onInput={(event) => setWallet(event.currentTarget.value)}
        />
        <p id="wallet-hint" class="note">
          A 0x-prefixed 20-byte address, in any letter case (mixed case must be a valid EIP-55 checksum).
        </p>
        <button type="submit" disabled={busy}>
          {busy ? 'Registering…' : 'Get builder code'}
        </button>
      </form>
      <div aria-live="polite">
        {outcome?.kind === 'registered' && (
          <p class="success" data-testid="registration">
            Builder code <strong data-field="builderCode">{outcome.registration.builderCode}</strong> for wallet{' '}
            <code>{outcome.registration.walletAddress}</code>. <a href={codePath(outcome.registration.builderCode)}>See its page</a>.
          </p>
        )}
        {outcome?.kind === 'error' && (
          <p class="error" id="register-error" role="alert" data-testid="registration-error">
            {outcome.message}
          </p>
        )}
      </div>
    </>
  )
}
