/**
 * A real OpenID provider for the single sign-on tests: oidc-provider on 127.0.0.1, port 0, with its
 * in-memory adapter, one static confidential client, its development login and consent pages, and the
 * people's claims read from a table the test changes (its groups claim among them). The provider's HTTP
 * listener is opened before the provider exists, so the issuer can name its port; the client's redirect
 * addresses are given when the consoles' ports are known.
 */
import { createServer, type Server } from 'node:http';
// oidc-provider ships no type declarations; the test uses its constructor and request handler alone.
// @ts-expect-error -- untyped module
import Provider from 'oidc-provider';

export const CLIENT_ID = 'treasury-console';
export const CLIENT_SECRET = 'a client secret of the test provider';

export interface DirectoryEntry {
  email: string;
  email_verified?: boolean;
  preferred_username?: string;
  groups: string[];
}

export interface RunningProvider {
  issuer: string;
  /** Subject → claims; read at each sign-in, so a test changes a person's groups between logins. */
  directory: Map<string, DirectoryEntry>;
  /** Starts answering, with the redirect addresses of the client (the consoles' callbacks). */
  serve(redirectUris: string[]): void;
  close(): Promise<void>;
}

export async function openIdentityProvider(): Promise<RunningProvider> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  const issuer = `http://127.0.0.1:${address.port}`;
  const directory = new Map<string, DirectoryEntry>();
  return {
    issuer,
    directory,
    serve(redirectUris) {
      const provider = new Provider(issuer, {
        clients: [
          {
            client_id: CLIENT_ID,
            client_secret: CLIENT_SECRET,
            redirect_uris: redirectUris,
            grant_types: ['authorization_code'],
            response_types: ['code'],
            token_endpoint_auth_method: 'client_secret_basic',
          },
        ],
        claims: {
          openid: ['sub'],
          email: ['email', 'email_verified'],
          profile: ['preferred_username'],
          groups: ['groups'],
        },
        cookies: { keys: ['a cookie key of the test provider'] },
        features: { devInteractions: { enabled: true } },
        pkce: { required: () => true },
        findAccount: (_context: unknown, id: string) => {
          const entry = directory.get(id);
          if (!entry) return undefined;
          return { accountId: id, claims: () => ({ sub: id, ...entry }) };
        },
      });
      server.on('request', provider.callback());
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A browser without the browser at the provider: follows its redirects with its cookies, fills the
 * development login form with `login` and posts the consent form, until the provider sends the browser
 * elsewhere (the console's callback), whose address it returns.
 */
export async function passProvider(authorizationUrl: string, login: string): Promise<URL> {
  const cookies = new Map<string, string>();
  let next: { url: URL; form?: URLSearchParams } = { url: new URL(authorizationUrl) };
  const origin = next.url.origin;
  for (let step = 0; step < 20; step++) {
    const response = await fetch(next.url, {
      method: next.form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        ...(cookies.size > 0 ? { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') } : {}),
        ...(next.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      body: next.form?.toString(),
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const at = pair.indexOf('=');
      const value = pair.slice(at + 1);
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) cookies.delete(pair.slice(0, at));
      else cookies.set(pair.slice(0, at), value);
    }
    const body = await response.text();
    const location = response.headers.get('location');
    if (location) {
      const target = new URL(location, next.url);
      if (target.origin !== origin) return target;
      next = { url: target };
      continue;
    }
    const action = /<form[^>]*action="([^"]+)"/.exec(body)?.[1];
    if (!action)
      throw new Error(`the provider answered ${response.status} without a form: ${body.slice(0, 500)}`);
    const form = new URLSearchParams();
    for (const match of body.matchAll(/<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"/g))
      form.set(match[1] ?? '', match[2] ?? '');
    if (form.get('prompt') === 'login') {
      form.set('login', login);
      form.set('password', 'any');
    }
    next = { url: new URL(action.replace(/&amp;/g, '&'), next.url), form };
  }
  throw new Error('the provider never sent the browser back');
}
