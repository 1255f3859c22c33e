import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import {
  classifyPacFailure,
  MAPPED_PAC_CODES,
  normalizeCode,
  translateFinkokStamp,
  translateSwStamp,
  type PacFailure,
  type PacOutcome,
} from '../src/index.ts';

type Row = [string, PacFailure, PacOutcome, string];

// Transport failures: the question is only "could the PAC have processed it?"
const transport: Row[] = [
  ['connection refused', { type: 'network', code: 'ECONNREFUSED', sent: false }, 'transient', 'ECONNREFUSED'],
  ['DNS failure', { type: 'network', code: 'ENOTFOUND', sent: false }, 'transient', 'ENOTFOUND'],
  ['DNS temporary failure', { type: 'network', code: 'EAI_AGAIN', sent: false }, 'transient', 'EAI_AGAIN'],
  ['host unreachable', { type: 'network', code: 'EHOSTUNREACH', sent: false }, 'transient', 'EHOSTUNREACH'],
  [
    'connect timeout',
    { type: 'network', code: 'ETIMEDOUT', sent: false, timeoutPhase: 'connect' },
    'transient',
    'ETIMEDOUT:connect',
  ],
  [
    'TLS timeout',
    { type: 'network', code: 'ETIMEDOUT', sent: false, timeoutPhase: 'secureConnect' },
    'transient',
    'ETIMEDOUT:secureConnect',
  ],
  [
    'reset before the request was written (stale keep-alive)',
    { type: 'network', code: 'ECONNRESET', sent: false },
    'transient',
    'ECONNRESET',
  ],
  [
    'response timeout after sending',
    { type: 'network', code: 'ETIMEDOUT', sent: true, timeoutPhase: 'response' },
    'ambiguous',
    'ETIMEDOUT:response',
  ],
  [
    'send timeout mid-upload',
    { type: 'network', code: 'ETIMEDOUT', sent: false, timeoutPhase: 'send' },
    'transient',
    'ETIMEDOUT',
  ],
  ['reset mid-response', { type: 'network', code: 'ECONNRESET', sent: true }, 'ambiguous', 'ECONNRESET'],
  [
    'socket hang up after sending',
    { type: 'network', code: 'ERR_GOT_REQUEST_ERROR', sent: true },
    'ambiguous',
    'ERR_GOT_REQUEST_ERROR',
  ],
  ['broken pipe after sending', { type: 'network', code: 'EPIPE', sent: true }, 'ambiguous', 'EPIPE'],
];

const http: Row[] = [
  ['503 unavailable', { type: 'http', status: 503 }, 'transient', 'HTTP503'],
  ['429 rate limited', { type: 'http', status: 429 }, 'transient', 'HTTP429'],
  ['401 not authenticated', { type: 'http', status: 401 }, 'transient', 'HTTP401'],
  ['500 internal error', { type: 'http', status: 500 }, 'ambiguous', 'HTTP500'],
  ['502 bad gateway', { type: 'http', status: 502 }, 'ambiguous', 'HTTP502'],
  ['504 gateway timeout', { type: 'http', status: 504 }, 'ambiguous', 'HTTP504'],
  ['400 without a code', { type: 'http', status: 400 }, 'permanent', 'HTTP400'],
  ['400 with an unmapped code', { type: 'http', status: 400, pacCode: 'XYZ9' }, 'permanent', 'XYZ9'],
  ['a 200 we cannot read', { type: 'unreadable', status: 200 }, 'ambiguous', 'UNREADABLE200'],
  ['an unmapped code in a well-formed answer', { type: 'pac', pacCode: '999' }, 'permanent', '999'],
  ['SW CFDI 4.0 validation', { type: 'http', status: 400, pacCode: 'CFDI40108' }, 'permanent', 'CFDI40108'],
  ['Finkok Pagos 2.0 validation', { type: 'pac', pacCode: 'CRP20207' }, 'permanent', 'CRP20207'],
];

// Every PAC code the classifier maps, each with its outcome.
const codes: Row[] = [
  ['307 timbre previo', { type: 'http', status: 400, pacCode: '307' }, 'already_stamped', '307'],
  ['CFDI3307 customid duplicado', { type: 'http', status: 400, pacCode: 'CFDI3307' }, 'already_stamped', 'CFDI3307'],
  ['301 estructura', { type: 'http', status: 400, pacCode: '301' }, 'permanent', '301'],
  ['302 sello', { type: 'http', status: 400, pacCode: '302' }, 'permanent', '302'],
  ['303 sello no corresponde', { type: 'http', status: 400, pacCode: '303' }, 'permanent', '303'],
  ['304 certificado revocado', { type: 'http', status: 400, pacCode: '304' }, 'permanent', '304'],
  ['305 fuera de vigencia', { type: 'http', status: 400, pacCode: '305' }, 'permanent', '305'],
  ['306 no es CSD', { type: 'http', status: 400, pacCode: '306' }, 'permanent', '306'],
  ['308 no expedido por el SAT', { type: 'http', status: 400, pacCode: '308' }, 'permanent', '308'],
  ['401 72 horas', { type: 'http', status: 400, pacCode: '401' }, 'permanent', '401'],
  ['402 LCO', { type: 'http', status: 400, pacCode: '402' }, 'permanent', '402'],
  ['403 anterior a 2012', { type: 'http', status: 400, pacCode: '403' }, 'permanent', '403'],
  ['Finkok 702', { type: 'pac', pacCode: '702' }, 'permanent', '702'],
  ['Finkok 705', { type: 'pac', pacCode: '705' }, 'permanent', '705'],
  ['Finkok 707 ya tiene TFD', { type: 'pac', pacCode: '707' }, 'permanent', '707'],
  ['Finkok 708 sin conexión al SAT', { type: 'pac', pacCode: '708' }, 'transient', '708'],
  ['Finkok 300 credenciales', { type: 'pac', pacCode: '300' }, 'transient', '300'],
  ['SW AU4101 token', { type: 'http', status: 401, pacCode: 'AU4101' }, 'transient', 'AU4101'],
  ['307 even on a 5xx', { type: 'http', status: 500, pacCode: '307' }, 'already_stamped', '307'],
];

describe('classifyPacFailure', () => {
  it.each([...transport, ...http, ...codes])('%s → %s', (_name, failure, outcome, code) => {
    expect(classifyPacFailure(failure)).toMatchObject({ outcome, code });
  });

  it('has a row for every PAC code it maps', () => {
    const covered = new Set(codes.map(([, f]) => (f.type === 'http' || f.type === 'pac' ? f.pacCode : '')));
    for (const code of MAPPED_PAC_CODES) expect(covered).toContain(code);
  });

  it.each([
    ['307. El comprobante contiene un timbre previo.', '307'],
    ['CFDI3307 - Timbre duplicado. El customId proporcionado está duplicado.', 'CFDI3307'],
    ['AU4101 - El token proporcionado no es válido', 'AU4101'],
    ['CFDI40108 - El TipoDeComprobante no es I,E o N', 'CFDI40108'],
    ['  301 ', '301'],
  ])('reads the code of %j', (message, code) => {
    expect(normalizeCode(message)).toBe(code);
  });
});

interface Fixture {
  protocol: 'sw' | 'finkok';
  operation: string;
  expected: { outcome: string; code?: string };
  response: { status: number; body: string };
}

describe('recorded PAC answers through the translators and the classifier', () => {
  const dir = new URL('./fixtures/pac/', import.meta.url);
  const fixtures = readdirSync(dir).filter((f) => f.endsWith('.json'));

  it('has fixtures for every outcome', () => {
    const outcomes = new Set(
      fixtures.map((f) => (JSON.parse(readFileSync(new URL(f, dir), 'utf8')) as Fixture).expected.outcome),
    );
    expect([...outcomes].sort()).toEqual(['already_stamped', 'not_found', 'permanent', 'stamped', 'transient']);
  });

  it.each(fixtures)('%s', (file) => {
    const fixture = JSON.parse(readFileSync(new URL(file, dir), 'utf8')) as Fixture;
    const { status, body } = fixture.response;
    const answer =
      fixture.protocol === 'sw'
        ? translateSwStamp(status, body)
        : translateFinkokStamp(status, body, fixture.operation);
    const got =
      answer.kind === 'stamp'
        ? { outcome: 'stamped' }
        : answer.kind === 'already'
          ? { outcome: 'already_stamped', code: answer.code }
          : answer.kind === 'not_found'
            ? { outcome: 'not_found', code: answer.code }
            : classifyPacFailure(answer.failure);
    expect(got).toMatchObject(fixture.expected);
  });
});
