import path from 'node:path';
import ts from 'typescript';
import { repoRoot } from './helm';

/**
 * Unknown-field detection, like `kubectl --validate=strict`. The kubernetes-models JSON-schema
 * validators check types, formats and required fields but accept any unknown key, so a
 * misspelt field (`readinesProbe`) would pass them and be silently dropped by the API server.
 * This walks a manifest against the TypeScript interfaces kubernetes-models ships (generated
 * from the same OpenAPI document) and reports every key the interface does not declare.
 */

/** apiVersion/kind -> module and interface name in kubernetes-models. */
const KINDS: Record<string, [module: string, iface: string]> = {
  'v1/ConfigMap': ['kubernetes-models/v1/ConfigMap', 'IConfigMap'],
  'v1/PersistentVolumeClaim': ['kubernetes-models/v1/PersistentVolumeClaim', 'IPersistentVolumeClaim'],
  'v1/Pod': ['kubernetes-models/v1/Pod', 'IPod'],
  'v1/Secret': ['kubernetes-models/v1/Secret', 'ISecret'],
  'v1/Service': ['kubernetes-models/v1/Service', 'IService'],
  'v1/ServiceAccount': ['kubernetes-models/v1/ServiceAccount', 'IServiceAccount'],
  'apps/v1/Deployment': ['kubernetes-models/apps/v1/Deployment', 'IDeployment'],
  'batch/v1/Job': ['kubernetes-models/batch/v1/Job', 'IJob'],
  'autoscaling/v2/HorizontalPodAutoscaler': [
    'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler',
    'IHorizontalPodAutoscaler',
  ],
  'policy/v1/PodDisruptionBudget': ['kubernetes-models/policy/v1/PodDisruptionBudget', 'IPodDisruptionBudget'],
  'networking.k8s.io/v1/Ingress': ['kubernetes-models/networking.k8s.io/v1/Ingress', 'IIngress'],
  'networking.k8s.io/v1/NetworkPolicy': [
    'kubernetes-models/networking.k8s.io/v1/NetworkPolicy',
    'INetworkPolicy',
  ],
};

interface Checker {
  checker: ts.TypeChecker;
  types: Map<string, ts.Type>;
}

let cached: Checker | undefined;

function load(): Checker {
  if (cached) return cached;
  const fileName = path.join(repoRoot, 'test/helm/__k8s_kinds__.ts');
  const entries = Object.entries(KINDS);
  const source = [
    ...entries.map(([, [module, iface]], i) => `import type { ${iface} as K${i} } from '${module}';`),
    'export interface Kinds {',
    ...entries.map(([key], i) => `  ${JSON.stringify(key)}: K${i};`),
    '}',
  ].join('\n');
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.Node16,
    moduleResolution: ts.ModuleResolutionKind.Node16,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, languageVersion, onError, shouldCreate) =>
    path.resolve(name) === fileName
      ? ts.createSourceFile(name, source, languageVersion)
      : getSourceFile(name, languageVersion, onError, shouldCreate);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => path.resolve(name) === fileName || fileExists(name);
  const program = ts.createProgram([fileName], options, host);
  const diagnostics = ts.getPreEmitDiagnostics(program, program.getSourceFile(fileName));
  if (diagnostics.length > 0) {
    const text = ts.formatDiagnostics(diagnostics, {
      getCanonicalFileName: (f) => f,
      getCurrentDirectory: () => repoRoot,
      getNewLine: () => '\n',
    });
    throw new Error(`cannot load the kubernetes-models types:\n${text}`);
  }
  const checker = program.getTypeChecker();
  const sourceFile = program.getSourceFile(fileName);
  const kindsDecl = sourceFile?.statements.find(ts.isInterfaceDeclaration);
  if (!kindsDecl) throw new Error('Kinds interface not found');
  const kindsType = checker.getTypeAtLocation(kindsDecl);
  const types = new Map<string, ts.Type>();
  for (const key of Object.keys(KINDS)) {
    const symbol = checker.getPropertyOfType(kindsType, key);
    if (!symbol) throw new Error(`no type for ${key}`);
    types.set(key, checker.getTypeOfSymbolAtLocation(symbol, kindsDecl));
  }
  cached = { checker, types };
  return cached;
}

export function hasStrictType(apiVersion: string, kind: string): boolean {
  return `${apiVersion}/${kind}` in KINDS;
}

/** Every path in `manifest` whose key the Kubernetes type does not declare. */
export function unknownFields(manifest: { apiVersion: string; kind: string }): string[] {
  const { checker, types } = load();
  const type = types.get(`${manifest.apiVersion}/${manifest.kind}`);
  if (!type) throw new Error(`no Kubernetes type for ${manifest.apiVersion} ${manifest.kind}`);
  const problems: string[] = [];

  const objectMembers = (t: ts.Type): ts.Type[] =>
    (t.isUnion() ? t.types : [t]).filter((m) => (m.flags & ts.TypeFlags.Object) !== 0);

  const walk = (value: unknown, t: ts.Type, at: string): void => {
    if (value === null || typeof value !== 'object') return;
    const candidates = objectMembers(checker.getNonNullableType(t));
    if (candidates.length === 0) return;
    if (Array.isArray(value)) {
      const arrayType = candidates.find((c) => checker.isArrayType(c));
      const element = arrayType && checker.getTypeArguments(arrayType as ts.TypeReference)[0];
      if (!element) return;
      value.forEach((item, i) => walk(item, element, `${at}[${i}]`));
      return;
    }
    const target = candidates.find((c) => !checker.isArrayType(c));
    if (!target) return;
    const index = checker.getIndexInfoOfType(target, ts.IndexKind.String);
    for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
      const member = checker.getPropertyOfType(target, key);
      const where = at ? `${at}.${key}` : key;
      if (member) walk(child, checker.getTypeOfSymbol(member), where);
      else if (index) walk(child, index.type, where);
      else problems.push(where);
    }
  };

  walk(manifest, type, '');
  return problems;
}
