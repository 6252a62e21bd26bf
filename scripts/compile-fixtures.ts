/**
 * Builds the committed test artifacts in `test/fixtures/artifacts/`, so tests need no compiler.
 *
 *   npx tsx scripts/compile-fixtures.ts                       compile test/fixtures/contracts/*.sol with solc
 *   npx tsx scripts/compile-fixtures.ts --account-abstraction also copy the published ERC-4337 artifacts
 *
 * `--account-abstraction` fetches `@account-abstraction/contracts` 0.6.0, 0.7.0 and 0.8.0 with `npm pack`
 * and keeps only the EntryPoint and SimpleAccountFactory artifacts: their bytecode must stay byte-exact,
 * because the canonical EntryPoint addresses are CREATE2 addresses of exactly that init code.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import solc from 'solc'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const CONTRACTS_DIR = join(ROOT, 'test/fixtures/contracts')
const ARTIFACTS_DIR = join(ROOT, 'test/fixtures/artifacts')
// Cancun runs on every node we test against (anvil, Base); newer solc defaults target later forks.
const EVM_VERSION = 'cancun'
const ACCOUNT_ABSTRACTION_VERSIONS = { V06: '0.6.0', V07: '0.7.0', V08: '0.8.0' } as const
const ACCOUNT_ABSTRACTION_CONTRACTS = ['EntryPoint', 'SimpleAccountFactory'] as const

type SolcOutput = {
  errors?: { severity: 'error' | 'warning' | 'info'; formattedMessage: string }[]
  contracts?: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>>
}

function writeArtifact(name: string, artifact: Record<string, unknown>): void {
  writeFileSync(join(ARTIFACTS_DIR, `${name}.json`), `${JSON.stringify(artifact, null, 2)}\n`)
  process.stdout.write(`wrote test/fixtures/artifacts/${name}.json\n`)
}

function compileContracts(): void {
  const files = readdirSync(CONTRACTS_DIR).filter((f) => f.endsWith('.sol')).sort()
  const input = {
    language: 'Solidity',
    sources: Object.fromEntries(files.map((f) => [f, { content: readFileSync(join(CONTRACTS_DIR, f), 'utf8') }])),
    settings: {
      evmVersion: EVM_VERSION,
      optimizer: { enabled: true, runs: 200 },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
    },
  }
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error')
  if (errors.length > 0) throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage).join('\n')}`)
  for (const warning of output.errors ?? []) process.stderr.write(warning.formattedMessage)
  for (const [file, contracts] of Object.entries(output.contracts ?? {})) {
    for (const [name, contract] of Object.entries(contracts)) {
      writeArtifact(name, {
        contractName: name,
        sourceName: `test/fixtures/contracts/${basename(file)}`,
        compiler: `solc ${solc.version()}`,
        abi: contract.abi,
        bytecode: `0x${contract.evm.bytecode.object}`,
        deployedBytecode: `0x${contract.evm.deployedBytecode.object}`,
      })
    }
  }
}

function copyAccountAbstractionArtifacts(): void {
  const dir = mkdtempSync(join(tmpdir(), 'codetrail-aa-'))
  try {
    for (const [suffix, version] of Object.entries(ACCOUNT_ABSTRACTION_VERSIONS)) {
      const pkg = `@account-abstraction/contracts@${version}`
      const tarball = execFileSync('npm', ['pack', pkg, '--silent', '--pack-destination', dir], { encoding: 'utf8' }).trim()
      const unpacked = join(dir, version)
      execFileSync('mkdir', ['-p', unpacked])
      execFileSync('tar', ['xzf', join(dir, tarball), '-C', unpacked])
      for (const name of ACCOUNT_ABSTRACTION_CONTRACTS) {
        const published = JSON.parse(readFileSync(join(unpacked, 'package/artifacts', `${name}.json`), 'utf8'))
        writeArtifact(`${name}${suffix}`, {
          contractName: published.contractName,
          sourceName: published.sourceName,
          package: pkg,
          abi: published.abi,
          bytecode: published.bytecode,
          deployedBytecode: published.deployedBytecode,
        })
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

compileContracts()
if (process.argv.includes('--account-abstraction')) copyAccountAbstractionArtifacts()
