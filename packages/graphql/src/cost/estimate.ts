// An operation's cost: requested (before execution, from @cost/@listSize and the slicing arguments) and actual (after, from the lists the response holds), saturating and bounded in work.
import {
  getNamedType,
  getNullableType,
  getOperationAST,
  isCompositeType,
  isListType,
  isObjectType,
  isInterfaceType,
  Kind,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import { costWeight, listSizeOf } from './directives';

/**
 * Costs stop growing here (1e15, below 2^53): every sum and product saturates, so no query, however
 * large its list sizes or deep its nesting, can overflow to Infinity or NaN or wrap to a small number.
 */
export const COST_CAP = 1e15;

/** How costs are counted, parsed once (see GraphqlRateLimitOptions for each field's meaning and default). */
export interface CostSettings {
  readonly objectWeight: number;
  readonly leafWeight: number;
  readonly mutationWeight: number;
  readonly defaultListSize: number;
  readonly maxDepth: number;
  readonly maxFields: number;
}

/** One operation as the servers hand it over (after parsing and validation). */
export interface OperationInput {
  readonly schema: GraphQLSchema;
  readonly document: DocumentNode;
  readonly operationName?: string | null;
  readonly variables?: Readonly<Record<string, unknown>> | null;
}

/** A requested cost: `cost` is a whole number up to COST_CAP; `tooComplex` when the walk went past `maxDepth` or `maxFields` (refuse it). */
export interface Estimate {
  readonly cost: number;
  readonly tooComplex?: 'depth' | 'fields';
  readonly operation: OperationDefinitionNode | undefined;
}

const sat = (n: number) => (n > COST_CAP ? COST_CAP : n);

class TooComplex {
  constructor(readonly why: 'depth' | 'fields') {}
}

interface Walk {
  readonly settings: CostSettings;
  readonly schema: GraphQLSchema;
  readonly fragments: ReadonlyMap<string, FragmentDefinitionNode>;
  readonly variables: Readonly<Record<string, unknown>>;
  readonly mutation: boolean;
  fields: number;
}

function walkOf(settings: CostSettings, input: OperationInput, op: OperationDefinitionNode): Walk {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of input.document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const variables: Record<string, unknown> = { ...(input.variables ?? {}) };
  for (const v of op.variableDefinitions ?? []) {
    const name = v.variable.name.value;
    if (variables[name] === undefined && v.defaultValue?.kind === Kind.INT) variables[name] = Number(v.defaultValue.value);
  }
  return { settings, schema: input.schema, fragments, variables, mutation: op.operation === 'mutation', fields: 0 };
}

/** The operation the request runs (by `operationName`), its root type, or undefined when there is none. */
function rootOf(input: OperationInput): { op: OperationDefinitionNode; root: GraphQLCompositeType } | undefined {
  const op = getOperationAST(input.document, input.operationName ?? undefined) ?? undefined;
  const root = op && input.schema.getRootType(op.operation);
  return op && root ? { op, root } : undefined;
}

/** The requested cost of the operation: an upper bound of what it can cost (monotone: more fields or larger sizes never cost less). */
export function estimateCost(settings: CostSettings, input: OperationInput): Estimate {
  const found = rootOf(input);
  if (!found) return { cost: 0, operation: undefined };
  const walk = walkOf(settings, input, found.op);
  try {
    return { cost: Math.ceil(selectionCost(walk, found.op.selectionSet, found.root, 1, undefined, new Set())), operation: found.op };
  } catch (error) {
    if (error instanceof TooComplex) return { cost: COST_CAP, tooComplex: error.why, operation: found.op };
    throw error;
  }
}

/** Every field a selection set selects on `type`, fragments expanded (a fragment already open on this path is not entered again). */
function* fieldsOf(walk: Walk, set: SelectionSetNode, type: GraphQLCompositeType, open: Set<string>): Generator<[FieldNode, GraphQLCompositeType]> {
  for (const s of set.selections) {
    if (s.kind === Kind.FIELD) yield [s, type];
    else if (s.kind === Kind.INLINE_FRAGMENT) {
      const on = s.typeCondition ? walk.schema.getType(s.typeCondition.name.value) : type;
      if (on && isCompositeType(on)) yield* fieldsOf(walk, s.selectionSet, on, open);
    } else {
      const name = s.name.value;
      const fragment = walk.fragments.get(name);
      const on = fragment && walk.schema.getType(fragment.typeCondition.name.value);
      if (!fragment || !on || !isCompositeType(on) || open.has(name)) continue;
      open.add(name);
      yield* fieldsOf(walk, fragment.selectionSet, on, open);
      open.delete(name);
    }
  }
}

function fieldDefOf(type: GraphQLCompositeType, name: string): GraphQLField<unknown, unknown> | undefined {
  // Meta fields (__typename, __schema, __type) have no definition here: they cost nothing.
  return isObjectType(type) || isInterfaceType(type) ? type.getFields()[name] : undefined;
}

/** The field's own weight and its arguments' (`@cost` on a field, else on its type, else the defaults). */
function weightsOf(walk: Walk, def: GraphQLField<unknown, unknown>, node: FieldNode, root: boolean): number {
  const named = getNamedType(def.type);
  const { objectWeight, leafWeight, mutationWeight } = walk.settings;
  const fallback = isCompositeType(named) ? (root && walk.mutation ? mutationWeight : objectWeight) : root && walk.mutation ? mutationWeight : leafWeight;
  let weight = costWeight(def) ?? costWeight(named) ?? fallback;
  for (const a of node.arguments ?? []) {
    const arg = def.args.find((d) => d.name === a.name.value);
    weight += (arg && costWeight(arg)) ?? 0;
  }
  return weight;
}

function counted(walk: Walk, depth: number): void {
  if (depth > walk.settings.maxDepth) throw new TooComplex('depth');
  if (++walk.fields > walk.settings.maxFields) throw new TooComplex('fields');
}

function selectionCost(walk: Walk, set: SelectionSetNode, type: GraphQLCompositeType, depth: number, sized: ReadonlyMap<string, number> | undefined, open: Set<string>): number {
  let total = 0;
  for (const [node, on] of fieldsOf(walk, set, type, open)) {
    counted(walk, depth);
    const def = fieldDefOf(on, node.name.value);
    if (!def) continue;
    const weight = weightsOf(walk, def, node, depth === 1);
    const named = getNamedType(def.type);
    const listSize = listSizeOf(def);
    const size = sized?.get(node.name.value) ?? sizeOf(walk, def, node);
    // @listSize(sizedFields): the size is the named child fields' (a connection's `edges`), not this field's.
    const passOn = listSize && listSize.sizedFields.length > 0 ? new Map(listSize.sizedFields.map((f) => [f, size])) : undefined;
    const children = node.selectionSet && isCompositeType(named) ? selectionCost(walk, node.selectionSet, named, depth + 1, passOn, open) : 0;
    const isList = isListType(getNullableType(def.type));
    total = sat(total + (isList ? sat(size * sat(weight + children)) : sat(weight + children)));
  }
  return total;
}

/** A list field's assumed length: the largest slicing argument given, else `assumedSize`, else `defaultListSize`. */
function sizeOf(walk: Walk, def: GraphQLField<unknown, unknown>, node: FieldNode): number {
  const listSize = listSizeOf(def);
  let largest: number | undefined;
  for (const name of listSize?.slicingArguments ?? []) {
    const arg = node.arguments?.find((a) => a.name.value === name);
    const n = arg && intOf(walk, arg.value);
    if (n !== undefined && (largest === undefined || n > largest)) largest = n;
  }
  return largest ?? listSize?.assumedSize ?? walk.settings.defaultListSize;
}

/** A slicing argument's value: a whole number from 0 (saturated), from a literal or a variable; anything else is not a size (the assumed one is used). */
function intOf(walk: Walk, value: ValueNode): number | undefined {
  const raw = value.kind === Kind.INT ? Number(value.value) : value.kind === Kind.VARIABLE ? walk.variables[value.name.value] : undefined;
  return typeof raw === 'number' && Number.isInteger(raw) && raw >= 0 ? sat(raw) : undefined;
}

/**
 * The actual cost: the same weights over what the response holds (a list costs per element it
 * returned, a null costs nothing), saturating like the estimate. `data` is the result's `data`.
 */
export function actualCost(settings: CostSettings, input: OperationInput, data: unknown): number {
  const found = rootOf(input);
  if (!found || !isRecord(data)) return 0;
  const walk = walkOf(settings, input, found.op);
  return Math.ceil(dataCost(walk, found.op.selectionSet, found.root, data, true, new Set()));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function dataCost(walk: Walk, set: SelectionSetNode, type: GraphQLCompositeType, data: Record<string, unknown>, root: boolean, open: Set<string>): number {
  let total = 0;
  for (const [node, on] of fieldsOf(walk, set, type, open)) {
    const value = data[node.alias?.value ?? node.name.value];
    const def = value === undefined || value === null ? undefined : fieldDefOf(on, node.name.value);
    if (!def) continue;
    const weight = weightsOf(walk, def, node, root);
    const named = getNamedType(def.type);
    const one = (v: unknown): number => {
      if (v === null || v === undefined) return 0;
      if (Array.isArray(v)) return v.reduce<number>((sum, e) => sat(sum + one(e)), 0);
      const children = node.selectionSet && isCompositeType(named) && isRecord(v) ? dataCost(walk, node.selectionSet, named, v, false, open) : 0;
      return sat(weight + children);
    };
    total = sat(total + one(value));
  }
  return total;
}
