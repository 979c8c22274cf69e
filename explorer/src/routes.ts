/**
 * Routes live in the URL's fragment (`#/block/7`), so every page is a link that can be bookmarked or
 * shared, and the service only has to serve one page. Tokens never go in a route.
 */
export type Route =
  | { name: 'home' }
  /** `from`: the newest block of the page (null: follow the head); `limit`: blocks per page, 1..100. */
  | { name: 'blocks'; from: number | null; limit: number }
  | { name: 'block'; number: number }
  | { name: 'transaction'; hash: string }
  | { name: 'account'; user: string }
  | { name: 'transfer' }
  /** The swap form, beside the transfer form. */
  | { name: 'swap' }
  | { name: 'not_found'; path: string };

const HASH = /^0x[0-9a-fA-F]{64}$/;
const BLOCK_NUMBER = /^[0-9]{1,15}$/;
export const BLOCKS_PAGE_SIZE = 20;
const BLOCKS_PAGE_SIZE_MAX = 100;

export function parseRoute(fragment: string): Route {
  const [path = '', query = ''] = fragment.replace(/^#/, '').split('?');
  const segments = path.split('/').filter((segment) => segment !== '');
  const [first, second] = segments;
  if (segments.length === 0) return { name: 'home' };
  if (first === 'blocks' && segments.length === 1) {
    const parameters = new URLSearchParams(query);
    const from = parameters.get('from');
    const limit = Number(parameters.get('limit') ?? BLOCKS_PAGE_SIZE);
    return {
      name: 'blocks',
      from: from !== null && BLOCK_NUMBER.test(from) ? Number(from) : null,
      limit: Number.isInteger(limit) && limit >= 1 && limit <= BLOCKS_PAGE_SIZE_MAX ? limit : BLOCKS_PAGE_SIZE,
    };
  }
  if (first === 'block' && segments.length === 2 && second !== undefined && BLOCK_NUMBER.test(second)) return { name: 'block', number: Number(second) };
  if (first === 'tx' && segments.length === 2 && second !== undefined && HASH.test(second)) return { name: 'transaction', hash: second.toLowerCase() };
  if (first === 'account' && segments.length === 2 && second !== undefined) return { name: 'account', user: safeDecode(second) };
  if (first === 'transfer' && segments.length === 1) return { name: 'transfer' };
  if (first === 'swap' && segments.length === 1) return { name: 'swap' };
  return { name: 'not_found', path };
}

export function href(route: Route): string {
  switch (route.name) {
    case 'home': return '#/';
    case 'blocks': {
      const parameters = new URLSearchParams();
      if (route.from !== null) parameters.set('from', String(route.from));
      if (route.limit !== BLOCKS_PAGE_SIZE) parameters.set('limit', String(route.limit));
      const query = parameters.toString();
      return query === '' ? '#/blocks' : `#/blocks?${query}`;
    }
    case 'block': return `#/block/${route.number}`;
    case 'transaction': return `#/tx/${route.hash}`;
    case 'account': return `#/account/${encodeURIComponent(route.user)}`;
    case 'transfer': return '#/transfer';
    case 'swap': return '#/swap';
    case 'not_found': return `#/${route.path}`;
  }
}

/** What a search box entry names: a transaction hash, a block number, or a user id. */
export type SearchTarget = { route: Route } | { problem: string };

export function searchTarget(input: string): SearchTarget {
  const text = input.trim();
  if (text === '') return { problem: 'Type a transaction hash, a block number or a user id.' };
  if (HASH.test(text)) return { route: { name: 'transaction', hash: text.toLowerCase() } };
  if (/^0x/i.test(text) && /^0x[0-9a-f]*$/i.test(text)) return { problem: 'A transaction hash is 0x followed by 64 hexadecimal digits.' };
  const block = /^#?([0-9]{1,15})$/.exec(text);
  if (block !== null) return { route: { name: 'block', number: Number(block[1]) } };
  if (/[\s\p{Cc}]/u.test(text) || [...text].length > 128) {
    return { problem: 'That is not a transaction hash, a block number or a user id (user ids have no spaces and at most 128 characters).' };
  }
  return { route: { name: 'account', user: text } };
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
