// The app on workerd (Cloudflare Workers): the module worker's default export.
import { getConnInfo } from 'hono/cloudflare-workers';
import { makeApp } from './app';

export default makeApp(getConnInfo);
