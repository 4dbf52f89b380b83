// The joints of src/ and web/src (docs/architecture.md): no import circle, nothing imports upwards, a module reaches
// another only through its index.ts, and the server and the web app meet only in src/common/ (pure code both builds
// may load) and the generated API types. `npm run depcruise` checks them (in .ci/run after the lint). Tests may import
// anything.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'common-stands-alone',
      severity: 'error',
      comment:
        'src/common/ is loaded by the server and by the web app in the browser: it imports nothing of either, and no Node module.',
      from: { path: '^src/common/' },
      to: { pathNot: '^src/common/' },
    },
    {
      name: 'web-within-web',
      severity: 'error',
      comment:
        'The web app imports its own files, src/common/ and packages; the server reaches it only through the generated types in web/src/api/.',
      from: { path: '^web/src/' },
      to: {
        dependencyTypesNot: ['npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-no-pkg', 'npm-unknown'],
        pathNot: ['^web/src/', '^src/common/'],
      },
    },
    {
      name: 'server-not-into-web',
      severity: 'error',
      comment: 'The server does not import the web app.',
      from: { path: '^src/' },
      to: { path: '^web/' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import circle: a module loads half-initialised depending on which file is imported first.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'platform-not-upward',
      severity: 'error',
      comment: 'The platform serves the modules, the tool server and the commands; it imports none of them.',
      from: { path: '^src/platform/' },
      to: {
        path: ['^src/modules/', '^src/mcp/', '^src/cli/', '^src/app\\.ts$', '^src/main\\.ts$', '^src/services\\.ts$'],
      },
    },
    {
      name: 'modules-not-upward',
      severity: 'error',
      comment:
        'A module is mounted by the application; it imports neither it, the composition root, the tool server nor the commands.',
      from: { path: '^src/modules/' },
      to: { path: ['^src/mcp/', '^src/cli/', '^src/app\\.ts$', '^src/main\\.ts$', '^src/services\\.ts$'] },
    },
    {
      name: 'module-through-index',
      severity: 'error',
      comment: "A module uses another module only through what that module's index.ts exports.",
      from: { path: '^src/modules/([^/]+)/', pathNot: '\\.tables\\.ts$' },
      to: { path: '^src/modules/[^/]+/', pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/index\\.ts$'] },
    },
    {
      name: 'tables-reference-tables',
      severity: 'error',
      comment: "A table file may name another module's table (a foreign key), and nothing else of that module.",
      from: { path: '^src/modules/([^/]+)/[^/]+\\.tables\\.ts$' },
      to: { path: '^src/modules/[^/]+/', pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/[^/]+\\.tables\\.ts$'] },
    },
  ],
  options: {
    exclude: { path: ['\\.test\\.ts$', '^web/dist/'] },
    // type-only imports count: a circle of types is still a circle a reader has to untangle
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    moduleSystems: ['es6'],
  },
}
