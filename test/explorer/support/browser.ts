/**
 * Headless Chromium for end-to-end tests: Debian's /usr/bin/chromium driven by playwright-core (no
 * browser download), a fresh profile folder per run, nothing reaching past loopback. Plus the checks
 * every page gets: a screenshot, and axe-core finding no serious accessibility violation.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { expect } from 'vitest';

export const CHROMIUM_PATH = '/usr/bin/chromium';
export const SCREENSHOT_DIR = path.resolve('.test-data/explorer-screenshots');
export const DESKTOP_VIEWPORT = { width: 1100, height: 760 };
export const PHONE_VIEWPORT = { width: 390, height: 844 };

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export type Browser = { context: BrowserContext; close(): Promise<void> };

export async function launchBrowser(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM_PATH)) throw new Error(`${CHROMIUM_PATH} is missing: apt-get install -y chromium (npm test does, as root: scripts/test-prerequisites.sh)`);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tabula-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: DESKTOP_VIEWPORT,
    locale: 'en-US',
    timezoneId: 'UTC',
    reducedMotion: 'reduce',
  });
  context.setDefaultTimeout(10_000);
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  return {
    context,
    async close() {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Saves `<name>.png` of the whole page into the screenshot folder. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}.png`), fullPage: true, animations: 'disabled', caret: 'hide' });
}

/** Saves `<name>.png` of one part of a page (e.g. a chart), with a margin of the page around it, into the screenshot folder. */
export async function screenshotOf(page: Page, part: Locator, name: string, margin_px = 16): Promise<void> {
  await part.scrollIntoViewIfNeeded();
  const box = await part.boundingBox();
  if (box === null) throw new Error(`${name}: the part to screenshot is not visible`);
  const x = Math.max(0, box.x - margin_px);
  const y = Math.max(0, box.y - margin_px);
  const clip = { x, y, width: box.width + margin_px * 2, height: box.height + margin_px * 2 };
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}.png`), clip, animations: 'disabled', caret: 'hide' });
}

const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

type AxeViolation = { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] };

/** axe-core's WCAG 2.1 A/AA rules: no serious or critical violation on the page as it is now. */
export async function expectAccessible(page: Page, where: string): Promise<void> {
  // Evaluated through the DevTools protocol: the page's CSP (no inline scripts) stays on.
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document, options: object): Promise<{ violations: AxeViolation[] }> } }).axe;
    const result = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] }, resultTypes: ['violations'] });
    return result.violations.map((violation) => ({ id: violation.id, impact: violation.impact, help: violation.help, nodes: violation.nodes.map((node) => node.target) }));
  });
  const serious = violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
  expect(serious, `${where}: ${JSON.stringify(serious, null, 2)}`).toEqual([]);
}
