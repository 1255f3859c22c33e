import { describe, expect, it } from '@jest/globals';
import { assertTransition, canTransition, INVOICE_STATUSES, InvalidTransitionError } from '../src/index.ts';

describe('invoice state machine', () => {
  it.each([
    ['waiting', 'pending'],
    ['waiting', 'needs_data'],
    ['needs_data', 'pending'],
    ['pending', 'stamped'],
    ['pending', 'stamp_failed'],
    ['stamp_failed', 'pending'],
    ['stamp_failed', 'stamped'],
    ['stamped', 'cancel_requested'],
    ['cancel_requested', 'cancelled'],
    ['cancel_requested', 'stamped'],
  ] as const)('allows %s → %s', (from, to) => {
    expect(canTransition(from, to)).toBe(true);
  });

  it('refuses every other move, e.g. leaving cancelled or skipping the stamp', () => {
    const allowed = 10;
    let count = 0;
    for (const from of INVOICE_STATUSES) for (const to of INVOICE_STATUSES) if (canTransition(from, to)) count++;
    expect(count).toBe(allowed);
    expect(() => assertTransition('cancelled', 'stamped')).toThrow(InvalidTransitionError);
    expect(() => assertTransition('needs_data', 'stamped')).toThrow(/needs_data to stamped/);
  });
});
