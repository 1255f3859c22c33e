/**
 * A real SMTP server on a free local port (smtp-server) that keeps what it receives, parsed by
 * mailparser: the tests, the chaos run and `npm run dev` read the customers' emails from it.
 * Faults on demand: answer a message with a temporary (4xx) or permanent (5xx) reply, or drop the
 * connection in the middle of the DATA.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

export interface ReceivedMail {
  /** Every RCPT TO of the envelope. */
  to: string[];
  messageId: string | undefined;
  parsed: ParsedMail;
  raw: Buffer;
  receivedAt: Date;
}

/** What the next messages meet: `accept`, a reply code (421/451: try later; 550: no), or `drop`. */
export type MailFault = 'accept' | 'drop' | { code: number; message?: string };

export interface Mailbox {
  url: string;
  port: number;
  received: ReceivedMail[];
  /** Every Message-ID a DATA carried, accepted or not (a retry shows the same one twice). */
  attempts: { messageId: string | undefined; outcome: 'accepted' | 'refused' | 'dropped' }[];
  /** Faults for the next messages, in order (then `accept`); `perRecipient` for one address always. */
  faults: MailFault[];
  perRecipient: Map<string, MailFault>;
  close(): Promise<void>;
}

interface MailboxOptions {
  port?: number;
  dir?: string;
  onMail?: (m: ReceivedMail) => void;
  /** Decides each message's fate when no queued or per-recipient fault applies (the chaos run's random faults). */
  decide?: (to: string[]) => MailFault;
}

type Box = Pick<Mailbox, 'received' | 'attempts' | 'faults' | 'perRecipient'>;

/**
 * Starts the server on 127.0.0.1 (`port` 0: a free one). No TLS, any or no login. With `dir`, each
 * accepted message is also written there as `<n>-<Message-ID>.eml`.
 */
export async function startMailbox(options: MailboxOptions = {}): Promise<Mailbox> {
  const box: Box = { received: [], attempts: [], faults: [], perRecipient: new Map() };
  if (options.dir) mkdirSync(options.dir, { recursive: true });
  const server: SMTPServer = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    size: 25 * 1024 * 1024,
    onAuth: (_auth, _session, callback) => callback(null, { user: 'any' }),
    onData: (stream, session, callback) => receive(server, box, options, stream, session, callback),
  });
  // The connection drops mid-DATA on purpose: not a server error.
  server.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    port,
    ...box,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

type OnData = NonNullable<SMTPServerOptions['onData']>;

/** One DATA: the fault that applies to it, then the message kept, refused or cut off. */
function receive(
  server: SMTPServer,
  box: Box,
  options: MailboxOptions,
  ...[stream, session, callback]: Parameters<OnData>
): void {
  const chunks: Buffer[] = [];
  const to = session.envelope.rcptTo.map((r) => r.address);
  const fault =
    to.map((t) => box.perRecipient.get(t)).find((f) => f !== undefined) ??
    box.faults.shift() ??
    options.decide?.(to) ??
    'accept';
  let dropped = false;
  stream.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    if (fault === 'drop' && !dropped && Buffer.concat(chunks).includes('\r\n\r\n')) {
      // Mid-DATA, after the headers: the Message-ID is seen, the message is not taken.
      dropped = true;
      const raw = Buffer.concat(chunks).toString('utf8');
      box.attempts.push({ messageId: /^message-id:\s*(\S+)/im.exec(raw)?.[1], outcome: 'dropped' });
      dropConnection(server, session.id);
    }
  });
  stream.on('end', () => {
    if (dropped) return;
    const raw = Buffer.concat(chunks);
    void simpleParser(raw).then((parsed) => {
      if (fault !== 'accept' && fault !== 'drop') {
        box.attempts.push({ messageId: parsed.messageId, outcome: 'refused' });
        const error = new Error(fault.message ?? `refused (${fault.code})`) as Error & { responseCode: number };
        error.responseCode = fault.code;
        return callback(error);
      }
      keep(box, options, { to, messageId: parsed.messageId, parsed, raw, receivedAt: new Date() });
      callback();
    }, callback);
  });
}

function keep(box: Box, options: MailboxOptions, mail: ReceivedMail): void {
  box.attempts.push({ messageId: mail.messageId, outcome: 'accepted' });
  box.received.push(mail);
  if (options.dir)
    writeFileSync(
      join(options.dir, `${box.received.length}-${(mail.messageId ?? 'no-id').replace(/[^\w.@-]/g, '')}.eml`),
      mail.raw,
    );
  options.onMail?.(mail);
}

/** smtp-server keeps its connections (each with its session and socket) in `connections`. */
function dropConnection(server: SMTPServer, sessionId: string): void {
  const connections = (
    server as unknown as { connections: Set<{ session: { id: string }; _socket: { destroy(): void } }> }
  ).connections;
  for (const c of connections) if (c.session.id === sessionId) c._socket.destroy();
}
