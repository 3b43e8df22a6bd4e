// The IBM cost directives (`@cost(weight)`, `@listSize(assumedSize, slicingArguments, sizedFields)`) as a schema declares them, read once per schema element.
import { Kind, type ConstDirectiveNode, type GraphQLArgument, type GraphQLField, type GraphQLNamedType } from 'graphql';

/** SDL for the two directives, to put in a schema-first schema's type definitions (IBM's GraphQL cost directive specification). */
export const COST_DIRECTIVES_SDL = `
directive @cost(weight: String!) on ARGUMENT_DEFINITION | ENUM | FIELD_DEFINITION | INPUT_FIELD_DEFINITION | OBJECT | SCALAR
directive @listSize(assumedSize: Int, slicingArguments: [String!], sizedFields: [String!], requireOneSlicingArgument: Boolean = true) on FIELD_DEFINITION
`;

/** What `@listSize` says about one list field. */
export interface ListSize {
  readonly assumedSize: number | undefined;
  readonly slicingArguments: readonly string[];
  readonly sizedFields: readonly string[];
}

/** A schema element the directives can sit on: its AST node's directives, and its `extensions` (code-first schemas). */
interface Annotated {
  readonly astNode?: { readonly directives?: readonly ConstDirectiveNode[] } | null;
  readonly extensions?: Readonly<Record<string, unknown>> | null;
}

const weights = new WeakMap<object, number | null>();
const listSizes = new WeakMap<object, ListSize | null>();

function directive(element: Annotated, name: string): ConstDirectiveNode | undefined {
  return element.astNode?.directives?.find((d) => d.name.value === name);
}

function argument(node: ConstDirectiveNode, name: string) {
  return node.arguments?.find((a) => a.name.value === name)?.value;
}

/** A weight a schema author wrote: a finite number from 0 (the spec's String, or a number in `extensions.cost`); anything else is ignored. */
function weightOf(raw: unknown): number | null {
  const n = typeof raw === 'string' ? Number(raw) : raw;
  return typeof n === 'number' && Number.isFinite(n) && n >= 0 ? n : null;
}

/** `@cost(weight:)` on a field, type or argument, or `extensions: { cost: n }`; null when neither is set. */
export function costWeight(element: GraphQLField<unknown, unknown> | GraphQLArgument | GraphQLNamedType): number | null {
  const cached = weights.get(element);
  if (cached !== undefined) return cached;
  const node = directive(element as Annotated, 'cost');
  const value = node && argument(node, 'weight');
  let weight: number | null = null;
  if (value && (value.kind === Kind.STRING || value.kind === Kind.INT || value.kind === Kind.FLOAT)) weight = weightOf(value.value);
  else if (!node) weight = weightOf((element as Annotated).extensions?.cost);
  weights.set(element, weight);
  return weight;
}

function strings(value: ReturnType<typeof argument>): string[] {
  if (!value || value.kind !== Kind.LIST) return [];
  return value.values.flatMap((v) => (v.kind === Kind.STRING ? [v.value] : []));
}

/** `@listSize(...)` on a field, or `extensions: { listSize: { assumedSize, slicingArguments, sizedFields } }`; null when neither is set. */
export function listSizeOf(field: GraphQLField<unknown, unknown>): ListSize | null {
  const cached = listSizes.get(field);
  if (cached !== undefined) return cached;
  const node = directive(field as Annotated, 'listSize');
  let size: ListSize | null = null;
  if (node) {
    const assumed = argument(node, 'assumedSize');
    const n = assumed && assumed.kind === Kind.INT ? Number(assumed.value) : undefined;
    size = {
      assumedSize: n !== undefined && Number.isSafeInteger(n) && n >= 0 ? n : undefined,
      slicingArguments: strings(argument(node, 'slicingArguments')),
      sizedFields: strings(argument(node, 'sizedFields')),
    };
  } else {
    const raw = (field as Annotated).extensions?.listSize as Partial<Record<keyof ListSize, unknown>> | undefined;
    if (raw && typeof raw === 'object') {
      const n = raw.assumedSize;
      const list = (v: unknown) => (Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : []);
      size = {
        assumedSize: typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined,
        slicingArguments: list(raw.slicingArguments),
        sizedFields: list(raw.sizedFields),
      };
    }
  }
  listSizes.set(field, size);
  return size;
}
