/**
 * Per-address rate limits of the OAuth endpoints anyone can call (rate-limiter-flexible).
 */
import type express from 'express';
import ipaddr from 'ipaddr.js';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { serialize } from '../../kernel/plugin.js';

/**
 * The key a client address counts under: an IPv4 address (IPv4-mapped IPv6 too) as itself, an
 * IPv6 address by its /64, since one host is commonly given a whole /64 and could otherwise
 * take a fresh address per request.
 */
export function addressKey(address: string | undefined): string {
  if (!address || !ipaddr.isValid(address)) return address ?? 'unknown';
  const ip = ipaddr.parse(address);
  if (ip.kind() === 'ipv4') return ip.toString();
  const v6 = ip as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
  return `${v6.parts
    .slice(0, 4)
    .map((p) => p.toString(16))
    .join(':')}::/64`;
}

/**
 * Requests a minute per client address (the socket's peer: the kernel trusts no forwarding
 * header). In memory, per process: a cluster of N processes behind a balancer allows up to N
 * times as much (docs/decisions.md). Over the limit: 429 with the error envelope and Retry-After.
 */
export function rateLimit(name: string, perMinute: number): express.RequestHandler {
  const limiter = new RateLimiterMemory({ keyPrefix: `oauth-${name}`, points: perMinute, duration: 60 });
  return (req, res, next) => {
    limiter.consume(addressKey(req.socket.remoteAddress)).then(
      () => next(),
      (rejected: unknown) => {
        if (!(rejected instanceof RateLimiterRes)) return next(rejected);
        const retryAfter = Math.max(1, Math.ceil(rejected.msBeforeNext / 1000));
        res.setHeader('retry-after', String(retryAfter));
        res.setHeader('cache-control', 'no-store');
        res
          .status(429)
          .type('application/json')
          .send(
            serialize({
              error: {
                code: 'rate_limited',
                message: `too many ${name} requests from this address; try again in ${retryAfter} s`,
                details: { limit_per_minute: perMinute, retry_after_s: retryAfter },
              },
            }),
          );
      },
    );
  };
}
