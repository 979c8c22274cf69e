/**
 * A small note in the header on how the page stays current: `Live` (the event stream is open),
 * `Polling` (it is not available, so the views ask every few seconds), `Connecting…` or `Paused`
 * (the tab was hidden). A polite status region, so a change of mode is announced, not shouted.
 */
import type { StreamMode } from '../event-stream';
import { useStreamMode } from '../live';

const LABELS: Record<StreamMode, { text: string; explanation: string } | null> = {
  idle: null,
  connecting: { text: 'Connecting…', explanation: 'opening the live event stream; checking every few seconds meanwhile' },
  live: { text: 'Live', explanation: 'changes arrive as they happen, from the event stream' },
  polling: { text: 'Polling', explanation: 'the live event stream is not available; checking every few seconds' },
  paused: { text: 'Paused', explanation: 'paused while the tab was hidden' },
};

export function LiveIndicator() {
  const mode = useStreamMode();
  const label = LABELS[mode];
  return (
    <span class="live-mode" data-mode={mode} role="status" title={label?.explanation}>
      {label === null ? null : (
        <>
          <span class="live-dot" aria-hidden="true" />
          <span class="visually-hidden">Updates: </span>
          {label.text}
          <span class="visually-hidden"> ({label.explanation})</span>
        </>
      )}
    </span>
  );
}
