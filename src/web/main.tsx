import { render } from 'preact'
import { LocationProvider, Route, Router, useLocation } from 'preact-iso'
import './styles.css'
import { CodePage } from './pages/code.js'
import { LiveFeed } from './pages/live.js'
import { Overview } from './pages/overview.js'
import { Register } from './pages/register.js'
import { PageHeading } from './components/common.js'

const NAV = [
  { href: '/', label: 'Overview' },
  { href: '/live', label: 'Live feed' },
  { href: '/register', label: 'Register' },
] as const

function Header() {
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
  return (
    <LocationProvider>
      <Header />
      <main id="main">
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
