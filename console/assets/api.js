// The console's one way to the server: same-origin requests with the
// session cookie, the CSRF token on unsafe methods, and problem+json
// answers turned into ApiError.

// ApiError is a problem+json answer: status, code, detail and the
// problem's extra fields (current_revision, field, ...) in fields.
export class ApiError extends Error {
  constructor(status, problem = {}) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.code = problem.code || (status === 401 ? 'unauthorized' : 'http_error');
    this.detail = problem.detail || problem.title || `The server answered ${status}.`;
    this.fields = problem;
  }
}

let csrfToken = '';

// setCSRF keeps the session's CSRF token for unsafe requests.
export function setCSRF(token) {
  csrfToken = token || '';
}

const unsafe = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

// url builds a path with a query, skipping empty values.
export function url(path, query = {}) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') params.set(key, String(value));
  }
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

// request sends one request and answers {status, data, headers}; any
// status >= 400 throws ApiError.
export async function request(method, path, { query, body, headers = {}, accept = 'application/json' } = {}) {
  const init = { method, credentials: 'same-origin', headers: { Accept: accept, ...headers } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  if (unsafe.has(method) && csrfToken) init.headers['X-CSRF-Token'] = csrfToken;
  let res;
  try {
    res = await fetch(url(path, query), init);
  } catch (err) {
    throw new ApiError(0, { code: 'network', detail: 'The server could not be reached. Check the connection and try again.' });
  }
  const type = res.headers.get('Content-Type') || '';
  let data = null;
  if (res.status !== 204 && res.status !== 304) {
    data = type.includes('json') ? await res.json().catch(() => null) : await res.text();
  }
  if (res.status === 401 && !path.startsWith('/ui/')) {
    // The session ended (expired, logged out elsewhere, token revoked).
    window.dispatchEvent(new CustomEvent('promptd:unauthorized'));
  }
  if (res.status >= 400) {
    throw new ApiError(res.status, data && typeof data === 'object' ? data : { detail: typeof data === 'string' && data.length < 300 ? data : undefined });
  }
  return { status: res.status, data, headers: res.headers };
}

// get answers the body of a GET.
export async function get(path, query, accept) {
  return (await request('GET', path, { query, accept })).data;
}

// send makes a change: send('PUT', path, body) -> {status, data, headers}.
export function send(method, path, body, headers) {
  return request(method, path, { body, headers });
}

// session answers the logged-in session, or null when there is none.
export async function session() {
  try {
    const s = await get('/ui/session');
    setCSRF(s.csrf_token);
    return s;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return null;
    throw err;
  }
}

// login exchanges a token for a session cookie.
export async function login(token) {
  await request('POST', '/ui/login', { body: { token } });
  return session();
}

// logout ends the session on the server.
export async function logout() {
  await request('POST', '/ui/logout');
  setCSRF('');
}

// idempotencyKey is a random key for a create that may be retried
// (crypto.getRandomValues works outside secure contexts too).
export function idempotencyKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
