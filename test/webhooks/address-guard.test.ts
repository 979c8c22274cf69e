/** The address guard: every refused range (IPv4, IPv6, IPv4 inside IPv6), the allow-list, URL checks, and resolution. */
import { describe, expect, it } from 'vitest';
import { AddressGuard, isRefusedAddress, RefusedAddressError } from '../../src/webhooks/address-guard.js';

const REFUSED = [
  '0.0.0.0', '0.1.2.3', '10.0.0.1', '10.255.255.255', '100.64.0.1', '127.0.0.1', '127.0.0.2', '127.255.255.254', '169.254.169.254', '172.16.0.1',
  '172.31.255.255', '192.168.1.1', '192.0.0.8', '198.18.0.1', '224.0.0.1', '239.255.255.250', '240.0.0.1', '255.255.255.255',
  '::', '::1', 'fe80::1', 'fe80::1%1', 'febf::1', 'fc00::1', 'fd12:3456:789a::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1',
  '::ffff:7f00:2', '::ffff:169.254.169.254', '::127.0.0.1', '64:ff9b::a9fe:a9fe', '2002:c0a8:0101::1', '2001:db8::1',
  // IPv4-translated (::ffff:0:0/96), local-use NAT64 (64:ff9b:1::/48), Teredo (2001::/32).
  '::ffff:0:127.0.0.1', '::ffff:0:a00:1', '64:ff9b:1::7f00:1', '64:ff9b:1:a9fe:a9fe::', '2001:0:4136:e378:8000:63bf:3fff:fdd2',
];
const PUBLIC = ['1.1.1.1', '8.8.8.8', '93.184.216.34', '172.32.0.1', '100.128.0.1', '192.169.0.1', '2606:4700:4700::1111', '2a00:1450:4001::200e', '::ffff:8.8.8.8', '64:ff9b::808:808', '::ffff:0:8.8.8.8'];

describe('the webhook address guard', () => {
  it.each(REFUSED)('refuses %s', (address) => {
    expect(isRefusedAddress(address)).toBe(true);
  });

  it.each(PUBLIC)('allows the public address %s', (address) => {
    expect(isRefusedAddress(address)).toBe(false);
  });

  it('refuses at creation what is not http(s), carries credentials, or names a refused address literal', () => {
    const guard = new AddressGuard([]);
    for (const url of ['ftp://example.com/', 'file:///etc/passwd', 'javascript:alert(1)', 'not a url', 'https://user:pw@example.com/', 'http://127.0.0.2:8080/',
      'http://[::1]/', 'http://[::ffff:127.0.0.1]/', 'http://169.254.169.254/latest/meta-data', 'http://0.0.0.0/', 'http://[fd00::1]/', 'http://2130706433/']) {
      expect(() => guard.checkUrl(url), url).toThrow(RefusedAddressError);
    }
    expect(guard.checkUrl('https://hooks.example.com/tabula').hostname).toBe('hooks.example.com');
    expect(guard.checkUrl('http://8.8.8.8:8080/x').port).toBe('8080');
  });

  it('allows listed addresses and hosts, and only those', () => {
    const guard = new AddressGuard(['127.0.0.1', 'internal.test', '[fd00::5]']);
    expect(() => guard.checkUrl('http://127.0.0.1:9/')).not.toThrow();
    expect(() => guard.checkUrl('http://[::ffff:127.0.0.1]:9/')).not.toThrow();
    expect(() => guard.checkUrl('http://[fd00::5]/')).not.toThrow();
    expect(() => guard.checkUrl('http://127.0.0.2:9/')).toThrow(RefusedAddressError);
    expect(() => guard.checkUrl('http://[fd00::6]/')).toThrow(RefusedAddressError);
    expect(guard.allows('internal.test', '10.1.2.3')).toBe(true);
    expect(guard.allows('other.test', '10.1.2.3')).toBe(false);
  });

  it('checks every resolved address and answers with a checked one (a name resolving to any refused address is refused)', async () => {
    const answers: Record<string, Array<{ address: string; family: number }>> = {
      'public.test': [{ address: '93.184.216.34', family: 4 }, { address: '2606:2800:220:1::1', family: 6 }],
      'rebind.test': [{ address: '93.184.216.34', family: 4 }, { address: '127.0.0.1', family: 4 }],
      'mapped.test': [{ address: '::ffff:192.168.0.1', family: 6 }],
      'empty.test': [],
    };
    const guard = new AddressGuard([], async (hostname) => {
      const found = answers[hostname];
      if (found === undefined) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      return found;
    });
    await expect(guard.resolve('public.test')).resolves.toEqual({ address: '93.184.216.34', family: 4 });
    await expect(guard.resolve('rebind.test')).rejects.toThrow(/127\.0\.0\.1/);
    await expect(guard.resolve('mapped.test')).rejects.toThrow(RefusedAddressError);
    await expect(guard.resolve('empty.test')).rejects.toThrow(/does not resolve/);
    await expect(guard.resolve('missing.test')).rejects.toThrow(/ENOTFOUND/);
  });

  it('resolves with the system resolver: loopback names are refused without the allow-list, a .invalid name does not resolve', async () => {
    await expect(new AddressGuard([]).resolve('localhost')).rejects.toThrow(RefusedAddressError);
    await expect(new AddressGuard([]).resolve('127.0.0.2')).rejects.toThrow(RefusedAddressError);
    await expect(new AddressGuard(['127.0.0.1']).resolve('127.0.0.1')).resolves.toEqual({ address: '127.0.0.1', family: 4 });
    await expect(new AddressGuard([]).resolve('no-such-host.invalid')).rejects.toThrow(/does not resolve/);
  });
});
