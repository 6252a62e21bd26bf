import { render } from 'preact'
import { useState } from 'preact/hooks'
import { LocationProvider, Route, Router, useLocation } from 'preact-iso'
import './styles.css'
import { CodePage } from './pages/code.js'
import { LiveFeed } from './pages/live.js'
import { Overview } from './pages/overview.js'
import { Register } from './pages/register.js'
import { PageHeading, useLoad } from './components/common.js'
import { answer, api, chainChoice, chooseChain } from './api.js'

const NAV = [
  { href: '/', label: 'Overview' },
  { href: '/live', label: 'Live feed' },
  { href: '/register', label: 'Register' },
] as const

/** Lists the deployment's chains when it indexes more than one; picking one reloads every page's reads for it. */
function ChainSwitch({ onSwitch }: { onSwitch: () => void }) {
  const { data: status } = useLoad((signal) => answer(api.GET('/v1/status', { signal })), 'chains')
  const chains = status?.chains ?? []
  if (chains.length < 2) return null
  return (
    <label class="chain-switch">
      Chain{' '}
      <select
        name="chain"
        value={String(chainChoice() ?? status!.chainId)}
        onChange={(event) => {
          const value = (event.target as HTMLSelectElement).value
          chooseChain(value === 'all' ? 'all' : Number(value))
          onSwitch()
        }}
      >
        <option value="all">All chains</option>
        {chains.map((chain) => (
          <option key={chain.chainId} value={String(chain.chainId)}>
            {chain.name ?? `chain ${chain.chainId}`} ({chain.chainId})
          </option>
        ))}
      </select>
    </label>
  )
}

function Header({ onSwitch }: { onSwitch: () => void }) {
  const { path } = useLocation()
  return (
    <header class="site-header">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <a class="brand" href="/">
        codetrail
      </a>
      <nav aria-label="Dashboard">
        <ul>
          {NAV.map((item) => (
            <li key={item.href}>
              <a href={item.href} aria-current={path === item.href ? 'page' : undefined}>
                {item.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <ChainSwitch onSwitch={onSwitch} />
    </header>
  )
}

function NotFound() {
  return (
    <>
      <PageHeading>Not found</PageHeading>
      <p>
        There is no such page. <a href="/">Back to the overview</a>.
      </p>
    </>
  )
}

function App() {
  // Bumped on a chain switch: the pages mount afresh and read the picked chain.
  const [generation, setGeneration] = useState(0)
  return (
    <LocationProvider>
      <Header onSwitch={() => setGeneration((n) => n + 1)} />
      <main id="main" key={generation}>
        <Router>
          <Route path="/" component={Overview} />
          <Route path="/live" component={LiveFeed} />
          <Route path="/register" component={Register} />
          <Route path="/codes/:code" component={CodePage} />
          <Route default component={NotFound} />
        </Router>
      </main>
      <footer class="site-footer">
        JSON API under <a href="/docs">/v1 (docs)</a> · times in your time zone, UTC on hover
      </footer>
    </LocationProvider>
  )
}

render(<App />, document.getElementById('app')!)
