// Cost estimation: the IBM directives' figures, the actual cost from a response, hostile operations bounded and refused, and generated operations (fast-check): monotone, bounded, never negative.
import fc from 'fast-check';
import { buildSchema, parse } from 'graphql';
import { actualCost, COST_CAP, COST_DIRECTIVES_SDL, estimateCost, type CostSettings } from '../src';

const settings: CostSettings = { objectWeight: 1, leafWeight: 0, mutationWeight: 10, defaultListSize: 10, maxDepth: 64, maxFields: 10_000 };
const schema = buildSchema(`${COST_DIRECTIVES_SDL}
type Author @cost(weight: "2") { name: String books(first: Int, last: Int): [Book!]! @listSize(slicingArguments: ["first", "last"]) }
type Book { title: String author: Author reviews: [Review!]! @listSize(assumedSize: 4) }
type Review { stars: Int @cost(weight: "3") }
type Edge { node: Book }
type Connection { edges: [Edge!]! count: Int }
type Query {
  authors(first: Int): [Author!]! @listSize(slicingArguments: ["first"])
  books: [Book!]!
  search(query: String @cost(weight: "7"), first: Int): Connection @listSize(slicingArguments: ["first"], sizedFields: ["edges"])
  node: Book
}
type Mutation { save: Boolean saveBook: Book @cost(weight: "25") }
`);
const cost = (query: string, variables?: Record<string, unknown>, s: CostSettings = settings) => estimateCost(s, { schema, document: parse(query), variables });

describe('estimateCost', () => {
  it('weighs objects 1, leaves 0, and @cost on a type, a field and an argument', () => {
    expect(cost('{ node { title } }').cost).toBe(1);
    // Author's type weight 2; Review.stars' field weight 3 per review (assumedSize 4); search's argument weight 7.
    expect(cost('{ node { author { name } } }').cost).toBe(3);
    expect(cost('{ node { reviews { stars } } }').cost).toBe(1 + 4 * (1 + 3));
    expect(cost('{ search(query: "x", first: 2) { count } }').cost).toBe(1 + 7);
  });

  it('multiplies a list by its largest slicing argument (a literal or a variable), else assumedSize, else defaultListSize', () => {
    expect(cost('{ authors(first: 5) { name } }').cost).toBe(5 * 2);
    expect(cost('query Q($n: Int) { authors(first: $n) { name } }', { n: 7 }).cost).toBe(7 * 2);
    expect(cost('query Q($n: Int = 3) { authors(first: $n) { name } }').cost).toBe(3 * 2);
    expect(cost('{ authors(first: 2) { books(first: 3, last: 9) { title } } }').cost).toBe(2 * (2 + 9 * 1));
    expect(cost('{ books { title } }').cost).toBe(10);
    expect(cost('{ books { title } }', undefined, { ...settings, defaultListSize: 50 }).cost).toBe(50);
  });

  it('applies a connection size to its sizedFields', () => {
    expect(cost('{ search(first: 20) { edges { node { title } } } }').cost).toBe(1 + 20 * (1 + 1));
  });

  it('weighs a mutation root field 10 unless it has @cost', () => {
    expect(cost('mutation { save }').cost).toBe(10);
    expect(cost('mutation { saveBook { title } }').cost).toBe(25);
  });

  it('counts fragments where they are spread, and __typename as nothing', () => {
    expect(cost('{ authors(first: 2) { ...A } } fragment A on Author { name __typename }').cost).toBe(4);
    expect(cost('{ node { ... on Book { author { name } } } }').cost).toBe(3);
  });

  it('saturates at COST_CAP however large the sizes multiply (never Infinity, NaN or a wrapped small number)', () => {
    const huge = '{ authors(first: 2147483647) { books(first: 2147483647) { reviews { stars author: title } } } }';
    const e = cost(huge);
    expect(e.cost).toBe(COST_CAP);
    expect(Number.isFinite(e.cost)).toBe(true);
    // A size from a variable that is not a whole number from 0 is not a size: the default applies.
    for (const n of [-5, 1.5, '99999', Number.MAX_VALUE, null]) expect(cost('query Q($n: Int) { authors(first: $n) { name } }', { n }).cost).toBe(n === Number.MAX_VALUE ? COST_CAP : 20);
  });

  it('refuses deep nesting and fragment fan-out past maxDepth / maxFields instead of walking them', () => {
    const deep = `{ node { ${'author { books(first: 1) { '.repeat(40)}title${' } }'.repeat(40)} } }`;
    expect(cost(deep).tooComplex).toBe('depth');
    expect(cost(deep).cost).toBe(COST_CAP);
    // Each fragment spreads the next one 4 times: 4^12 fields if walked.
    const fragments = Array.from({ length: 12 }, (_, i) => `fragment F${i} on Book { ${i === 11 ? 'title' : `...F${i + 1} ...F${i + 1} ...F${i + 1} ...F${i + 1}`} }`).join('\n');
    const fan = cost(`{ node { ...F0 } }\n${fragments}`);
    expect(fan.tooComplex).toBe('fields');
  });
});

describe('actualCost', () => {
  it('counts the lists the response holds, with the same weights; a null costs nothing', () => {
    const q = '{ authors(first: 10) { name books(first: 5) { title } } }';
    expect(cost(q).cost).toBe(10 * (2 + 5));
    const data = { authors: [{ name: 'a', books: [{ title: 'x' }, { title: 'y' }] }, { name: 'b', books: [] }] };
    expect(actualCost(settings, { schema, document: parse(q) }, data)).toBe(2 + 2 + 2);
    expect(actualCost(settings, { schema, document: parse('{ node { title } }') }, { node: null })).toBe(0);
    expect(actualCost(settings, { schema, document: parse(q) }, null)).toBe(0);
  });
});

/** A random operation over the schema above: nested selections of Author/Book fields with random slicing sizes. */
function operation(depth: number): fc.Arbitrary<string> {
  const size = fc.integer({ min: 0, max: 5000 });
  const leaf = fc.constantFrom('title', '__typename');
  const book: fc.Arbitrary<string> = depth <= 0 ? leaf : fc.oneof(leaf, operation(depth - 1).map((inner) => `author { name books(first: 3) { ${inner} } }`), fc.constant('reviews { stars }'));
  return fc.tuple(size, fc.array(book, { minLength: 1, maxLength: 4 })).map(([n, fields]) => `authors(first: ${n}) { name books(first: ${n}) { ${fields.join(' ')} } }`);
}

describe('generated operations', () => {
  it('the estimate is a whole number from 0 to COST_CAP, and adding a field or raising a size never lowers it', () => {
    fc.assert(
      fc.property(operation(3), operation(3), fc.integer({ min: 0, max: 1e9 }), (a, b, bump) => {
        const one = cost(`{ ${a} }`).cost;
        const both = cost(`{ ${a} ${b.replace(/^authors/, 'more: authors')} }`).cost;
        const bigger = cost(`{ ${a.replace(/first: (\d+)/, (_m, n: string) => `first: ${Math.min(2147483647, Number(n) + bump)}`)} }`).cost;
        for (const c of [one, both, bigger]) expect(Number.isInteger(c) && c >= 0 && c <= COST_CAP).toBe(true);
        expect(both).toBeGreaterThanOrEqual(one);
        expect(bigger).toBeGreaterThanOrEqual(one);
      }),
      { numRuns: 300 },
    );
  });

  it('the actual cost of any response shorter than the requested lists is at most the estimate, and never negative', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 50 }), (n, got, books) => {
        const q = `{ authors(first: ${n}) { name books(first: ${n}) { title } } }`;
        const data = { authors: Array.from({ length: Math.min(n, got) }, () => ({ name: 'a', books: Array.from({ length: Math.min(n, books) }, () => ({ title: 't' })) })) };
        const actual = actualCost(settings, { schema, document: parse(q) }, data);
        expect(actual).toBeGreaterThanOrEqual(0);
        expect(actual).toBeLessThanOrEqual(cost(q).cost);
      }),
      { numRuns: 300 },
    );
  });
});
