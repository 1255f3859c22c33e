import { createSign, createVerify, type KeyLike } from 'node:crypto';

/**
 * Sello: RSA PKCS#1 v1.5 with SHA-256 over the UTF-8 bytes of the cadena original, base64
 * (Anexo 20, "Generación de sellos digitales").
 */
export function sellar(cadenaOriginal: string, privateKey: KeyLike): string {
  return createSign('RSA-SHA256').update(cadenaOriginal, 'utf8').sign(privateKey, 'base64');
}

/** Verifies a Sello (or a TFD SelloSAT) against a cadena original and a certificate or public key. */
export function verificarSello(cadenaOriginal: string, sello: string, publicKey: KeyLike): boolean {
  return createVerify('RSA-SHA256').update(cadenaOriginal, 'utf8').verify(publicKey, sello, 'base64');
}
