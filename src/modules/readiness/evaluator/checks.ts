import { Application, Ecosystem, Workspace } from './workspace';

/** A check's verdict and the evidence it rests on (the files found, or what was looked for). */
export interface Finding {
  pass: boolean;
  evidence: string;
}

type RepositoryCheck = (workspace: Workspace) => Promise<Finding> | Finding;
type ApplicationCheck = (app: Application, workspace: Workspace) => Promise<Finding> | Finding;

const found = (evidence: string): Finding => ({ pass: true, evidence });
const missing = (evidence: string): Finding => ({ pass: false, evidence });

/** Vendored code is not the repository's own evidence. */
const VENDORED = /(^|\/)(node_modules|vendor|third_party)\//;

/** The shallowest file matching the first pattern that matches any (patterns are in order of preference). */
function first(files: readonly string[], patterns: RegExp[]): string | undefined {
  for (const pattern of patterns) {
    let best: string | undefined;
    for (const file of files) if (pattern.test(file) && !VENDORED.test(file) && (!best || depth(file) < depth(best))) best = file;
    if (best) return best;
  }
  return undefined;
}

const depth = (file: string) => file.split('/').length;
const atRoot = (name: string) => new RegExp(`^${name}$`, 'i');
const anywhere = (name: string) => new RegExp(`(^|/)${name}$`, 'i');

/** A repository check that passes when one of the patterns names a file. */
function fileCheck(what: string, patterns: RegExp[]): RepositoryCheck {
  return (workspace) => {
    const file = first(workspace.files, patterns);
    return file ? found(`${file} found`) : missing(`no ${what} found`);
  };
}

function dependencies(app: Application): string[] {
  const pkg = app.packageJson;
  return [...Object.keys(pkg?.dependencies ?? {}), ...Object.keys(pkg?.devDependencies ?? {})];
}

/** A manifest's lines that can name packages: without comments and descriptive metadata (whose words are not evidence). */
function dependencyLines(text: string): string {
  return text
    .split('\n')
    .filter(
      (line) =>
        !/^\s*(#|\/\/)/.test(line) && !/^\s*(description|summary|name|keywords|authors|readme|license|homepage|documentation|repository)\s*=/.test(line),
    )
    .join('\n');
}

/** Whether the application names a package (in package.json's dependencies, or on a dependency line of another manifest). */
function uses(app: Application, names: RegExp): string | undefined {
  const dep = dependencies(app).find((name) => names.test(name));
  if (dep) return `${dep} in package.json`;
  for (const [file, text] of app.manifests) {
    if (file === 'package.json') continue;
    const match = names.exec(dependencyLines(text));
    if (match) return `${match[0]} in ${file}`;
  }
  return undefined;
}

const has = (app: Application, ...ecosystems: Ecosystem[]) => ecosystems.some((ecosystem) => app.ecosystems.has(ecosystem));

/**
 * An application check: the first source of evidence that answers wins — a file of the
 * application (or of the repository root, shared by all), a package it uses, or its language.
 */
function appCheck(
  what: string,
  spec: { files?: RegExp[]; exclude?: RegExp; packages?: RegExp; script?: RegExp; builtIn?: Partial<Record<Ecosystem, string>>; manifest?: RegExp },
): ApplicationCheck {
  return (app, workspace) => {
    if (spec.files) {
      const own = first(
        app.files.filter((file) => !spec.exclude?.test(file)),
        spec.files,
      );
      if (own) return found(app.path === '.' ? own : `${app.path}/${own}`);
      const shared = first(
        workspace.files.filter((file) => !file.includes('/')),
        spec.files,
      );
      if (shared) return found(`${shared} (repository root)`);
    }
    if (spec.script && app.packageJson?.scripts) {
      const script = Object.entries(app.packageJson.scripts).find(([name]) => spec.script!.test(name));
      if (script) return found(`script "${script[0]}" in package.json`);
    }
    if (spec.manifest) {
      for (const [file, text] of app.manifests) if (spec.manifest.test(text)) return found(`${spec.manifest.exec(text)![0].trim()} in ${file}`);
    }
    if (spec.packages) {
      const used = uses(app, spec.packages);
      if (used) return found(used);
    }
    for (const [ecosystem, reason] of Object.entries(spec.builtIn ?? {})) {
      if (has(app, ecosystem as Ecosystem)) return found(reason!);
    }
    return missing(`no ${what}`);
  };
}

const LOCKFILES: Record<Ecosystem, RegExp[]> = {
  node: [/^package-lock\.json$/, /^yarn\.lock$/, /^pnpm-lock\.yaml$/, /^bun\.lockb?$/, /^npm-shrinkwrap\.json$/],
  python: [/^poetry\.lock$/, /^uv\.lock$/, /^Pipfile\.lock$/, /^pdm\.lock$/, /^requirements[^/]*\.txt$/],
  go: [/^go\.sum$/],
  rust: [/^Cargo\.lock$/],
  java: [/^gradle\.lockfile$/, /^pom\.xml$/],
  ruby: [/^Gemfile\.lock$/],
  php: [/^composer\.lock$/],
  unknown: [],
};

export const REPOSITORY_CHECKS: Record<string, RepositoryCheck> = {
  readme: fileCheck('README at the root (README, README.md, .rst, .txt, .adoc)', [/^readme(\.(md|markdown|rst|txt|adoc))?$/i]),
  gitignore: fileCheck('.gitignore at the root', [atRoot('\\.gitignore')]),
  agents_md: fileCheck('AGENTS.md at the root', [atRoot('agents\\.md')]),
  contributing_guide: fileCheck('CONTRIBUTING guide (root, .github/ or docs/)', [/^(\.github\/|docs\/)?contributing(\.(md|rst|txt))?$/i]),
  devcontainer: fileCheck('dev container (.devcontainer/devcontainer.json or .devcontainer.json)', [
    /^\.devcontainer(\/[^/]+)?\/devcontainer\.json$/,
    /^\.devcontainer\.json$/,
  ]),
  env_example: fileCheck('example environment file (.env.example, .env.sample, .env.template)', [
    anywhere('\\.env\\.(example|sample|template|dist)'),
    anywhere('example\\.env'),
  ]),
  pre_commit_hooks: fileCheck('pre-commit hooks (.pre-commit-config.yaml, .husky/, lefthook, lint-staged)', [
    atRoot('\\.pre-commit-config\\.ya?ml'),
    /^\.husky\/[^/]+$/,
    atRoot('\\.?lefthook\\.ya?ml'),
    atRoot('\\.lintstagedrc(\\.[a-z]+)?'),
    atRoot('lint-staged\\.config\\.[cm]?js'),
  ]),
  codeowners: fileCheck('CODEOWNERS (root, .github/ or docs/)', [/^(\.github\/|docs\/)?CODEOWNERS$/]),
  issue_templates: fileCheck('issue templates (.github/ISSUE_TEMPLATE/, .gitlab/issue_templates/)', [
    /^\.github\/ISSUE_TEMPLATE(\/[^/]+|\.md)$/i,
    /^\.gitlab\/issue_templates\/[^/]+$/,
  ]),
  ci_pipeline: fileCheck('CI definition (.github/workflows/, .gitlab-ci.yml, .circleci/, Jenkinsfile, azure-pipelines.yml, .buildkite/, .ci/)', [
    /^\.github\/workflows\/[^/]+\.ya?ml$/,
    /^\.gitlab-ci\.ya?ml$/,
    /^\.circleci\/config\.ya?ml$/,
    /^Jenkinsfile$/,
    /^azure-pipelines\.ya?ml$/,
    /^\.buildkite\/[^/]+$/,
    /^bitbucket-pipelines\.ya?ml$/,
    /^\.drone\.ya?ml$/,
    /^\.ci\/[^/]+$/,
  ]),
  secret_scanning: async (workspace) => {
    const config = first(workspace.files, [
      atRoot('\\.gitleaks\\.toml'),
      atRoot('\\.secrets\\.baseline'),
      atRoot('\\.trufflehog[^/]*'),
      atRoot('\\.talismanrc'),
    ]);
    if (config) return found(`${config} found`);
    const ci = workspace.files.filter((file) =>
      /^(\.github\/workflows\/[^/]+|\.gitlab-ci\.ya?ml|\.pre-commit-config\.ya?ml|\.circleci\/config\.ya?ml)$/.test(file),
    );
    for (const file of ci) {
      const tool = /gitleaks|trufflehog|detect-secrets|ggshield|talisman/i.exec(await workspace.read(file));
      if (tool) return found(`${tool[0]} in ${file}`);
    }
    return missing('no secret scanning (gitleaks, trufflehog, detect-secrets config, or such a step in CI or pre-commit)');
  },
  dependency_updates: fileCheck('automated dependency updates (.github/dependabot.yml, renovate.json)', [
    /^\.github\/dependabot\.ya?ml$/,
    /^(\.github\/)?renovate\.json5?$/,
    atRoot('\\.renovaterc(\\.json)?'),
  ]),
  pr_template: fileCheck('pull request template (.github/pull_request_template.md, .gitlab/merge_request_templates/)', [
    /^(\.github\/|docs\/)?pull_request_template\.md$/i,
    /^\.github\/PULL_REQUEST_TEMPLATE\/[^/]+$/i,
    /^\.gitlab\/merge_request_templates\/[^/]+$/,
  ]),
  containerized: fileCheck('container build (Dockerfile, Containerfile, compose file)', [
    anywhere('(Dockerfile|Containerfile)(\\.[a-z0-9-]+)?'),
    anywhere('(docker-)?compose\\.ya?ml'),
  ]),
  api_docs: fileCheck('documentation beyond the README (docs/ with Markdown, an OpenAPI document)', [
    /^docs?\/.+\.(md|mdx|rst|adoc)$/i,
    anywhere('(openapi|swagger)\\.(json|ya?ml)'),
  ]),
  changelog: fileCheck('changelog at the root (CHANGELOG, HISTORY, CHANGES)', [/^(changelog|history|changes)(\.(md|rst|txt))?$/i]),
  runbooks: fileCheck('runbooks (a file or folder named runbook, docs/operations/)', [/(^|\/)runbooks?(\/|\.|$)/i, /^docs\/(operations|ops)\//i]),
};

export const APPLICATION_CHECKS: Record<string, ApplicationCheck> = {
  linter: appCheck('linter (ESLint, Biome, Ruff, Flake8, Pylint, golangci-lint, RuboCop, PHPStan, Checkstyle)', {
    files: [
      /^eslint\.config\.[cm]?[jt]s$/,
      /^\.eslintrc(\.[a-z]+)?$/,
      /^biome\.jsonc?$/,
      /^\.?ruff\.toml$/,
      /^\.flake8$/,
      /^\.pylintrc$/,
      /^\.golangci\.ya?ml$/,
      /^\.rubocop\.yml$/,
      /^phpstan\.neon(\.dist)?$/,
      /^phpcs\.xml(\.dist)?$/,
      /^checkstyle\.xml$/,
    ],
    manifest: /^\[tool\.(ruff|pylint|flake8)[\].]/m,
    packages: /^(eslint|@biomejs\/biome|oxlint|ruff|flake8|pylint|rubocop|golangci-lint)$|\b(ruff|flake8|pylint|rubocop)\b/,
    builtIn: { rust: 'Rust ships cargo clippy', go: 'Go ships go vet' },
  }),
  type_checker: appCheck('type checking (tsconfig.json, mypy, pyright, or a statically typed language)', {
    files: [/^tsconfig\.json$/, /^tsconfig(\.[a-z]+)?\.json$/, /^jsconfig\.json$/, /^mypy\.ini$/, /^\.mypy\.ini$/, /^pyrightconfig\.json$/, /^sorbet\/config$/],
    manifest: /^\[tool\.(mypy|pyright)[\].]/m,
    packages: /^(typescript|mypy|pyright)$|\b(mypy|pyright)\b/,
    builtIn: { go: 'Go is statically typed', rust: 'Rust is statically typed', java: 'Java/Kotlin is statically typed' },
  }),
  unit_tests: appCheck('unit tests (*.test.*, *.spec.*, test_*.py, *_test.go, tests/ or __tests__/)', {
    files: [
      /\.(test|spec)\.[cm]?[jt]sx?$/,
      /(^|\/)test_[^/]+\.py$/,
      /_test\.(py|go)$/,
      /_spec\.rb$/,
      /(^|\/)(__tests__|tests?|spec)\/.+\.[a-z]+$/,
      /Test\.(java|kt)$/,
    ],
    exclude: /(^|\/)(e2e|integration|acceptance)(\/|[-.])|\.e2e-spec\./i,
  }),
  build_command: appCheck('build command (a "build" script, Makefile, or a build tool of the language)', {
    script: /^(build|compile)$/,
    files: [/^Makefile$/, /^justfile$/i, /^Taskfile\.ya?ml$/],
    manifest: /^\[build-system\]/m,
    builtIn: { go: 'go build (go.mod)', rust: 'cargo build (Cargo.toml)', java: 'Maven or Gradle build file' },
  }),
  lockfile: (app, workspace) => {
    const ecosystems = [...app.ecosystems].filter((ecosystem) => ecosystem !== 'unknown');
    if (ecosystems.length === 0) return missing('no manifest, so nothing to lock');
    const patterns = ecosystems.flatMap((ecosystem) => LOCKFILES[ecosystem]);
    const own = app.files.find((file) => !file.includes('/') && patterns.some((pattern) => pattern.test(file)));
    if (own) return found(app.path === '.' ? own : `${app.path}/${own}`);
    const shared = workspace.files.find((file) => !file.includes('/') && patterns.some((pattern) => pattern.test(file)));
    return shared ? found(`${shared} (repository root)`) : missing(`no lockfile for ${ecosystems.join(', ')}`);
  },
  formatter: appCheck('formatter (Prettier, Biome, Black, Ruff format, rustfmt, gofmt)', {
    files: [/^\.prettierrc(\.[a-z]+)?$/, /^prettier\.config\.[cm]?js$/, /^biome\.jsonc?$/, /^\.editorconfig$/, /^rustfmt\.toml$/, /^\.rustfmt\.toml$/],
    manifest: /^\[tool\.(black|ruff\.format)[\].]|^\s*"prettier"\s*:/m,
    packages: /^(prettier|@biomejs\/biome|black)$|\bblack\b/,
    builtIn: { go: 'Go ships gofmt', rust: 'Rust ships rustfmt' },
  }),
  integration_tests: appCheck('integration or end-to-end tests (e2e/, integration/, *.e2e-spec.*, *.integration.*)', {
    files: [/(^|\/)(e2e|integration|integration[-_]tests?|it|acceptance)\/.+\.[a-z]+$/i, /\.(e2e|integration)[-.](test|spec)\.[a-z]+$/, /\.e2e-spec\.[a-z]+$/],
    packages: /^(@playwright\/test|cypress|supertest|testcontainers)$/,
  }),
  structured_logging: appCheck('structured logging library (pino, winston, bunyan, structlog, zap, zerolog, logrus, tracing, logback)', {
    packages:
      /^(pino|nestjs-pino|winston|bunyan|@nestjs\/pino)$|\b(structlog|go\.uber\.org\/zap|zerolog|logrus|tracing-subscriber|logstash-logback-encoder|monolog)\b/,
  }),
  tracing_metrics: appCheck('tracing or metrics (OpenTelemetry, Prometheus client, StatsD, Datadog)', {
    packages:
      /^(@opentelemetry\/[a-z-]+|prom-client|dd-trace|hot-shots|newrelic)$|\b(opentelemetry[a-z_-]*|prometheus[_-]client|prometheus\/client_golang|micrometer|ddtrace)\b/,
  }),
  test_coverage: appCheck('coverage measurement (coverage thresholds, nyc/c8, codecov, pytest-cov, .coveragerc)', {
    files: [/^\.nycrc(\.[a-z]+)?$/, /^\.c8rc(\.json)?$/, /^\.?codecov\.ya?ml$/, /^\.coveragerc$/, /^tarpaulin\.toml$/],
    manifest: /coverageThreshold|"collectCoverage"\s*:\s*true|^\[tool\.coverage[\].]/m,
    packages: /^(nyc|c8|@vitest\/coverage-[a-z0-9]+|pytest-cov)$|\b(pytest-cov|coverage)\b/,
  }),
  feature_flags: appCheck('feature flags (LaunchDarkly, Unleash, GrowthBook, Flagsmith, OpenFeature, ConfigCat)', {
    packages: /(launchdarkly|unleash|growthbook|flagsmith|openfeature|configcat|@splitsoftware)/i,
  }),
  product_analytics: appCheck('product analytics (PostHog, Segment, Amplitude, Mixpanel, RudderStack)', {
    packages: /(posthog|@segment\/|analytics-node|amplitude|mixpanel|rudderstack|@rudderstack)/i,
  }),
};
