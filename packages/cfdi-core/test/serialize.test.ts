import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { attr, freezeComprobante, parseXml, serializeXml, type XmlElement } from '../src/index.ts';
import { hostileText } from './helpers/arbitraries.ts';
import { ingresoRequest } from './helpers/requests.ts';
import { loadTestCsd } from './helpers/sat.ts';

const el = (attrs: [string, string][], text?: string): XmlElement => ({
  kind: 'element',
  ns: 'urn:t',
  name: 't:r',
  local: 'r',
  attrs: [['xmlns:t', 'urn:t'], ...attrs],
  children: text === undefined ? [] : [{ kind: 'text', text }],
});

describe('serializeXml', () => {
  // SaxonJS reads the same documents in the cadena oracle tests: two independent parsers.
  it('round-trips any attribute and text value exactly (the saxes parser reads back what was written)', () => {
    fc.assert(
      fc.property(hostileText(200), hostileText(200), (value, text) => {
        const back = parseXml(serializeXml(el([['A', value]], text)));
        expect(attr(back, 'A')).toBe(value); // exact, tabs, CR and LF included
        expect(back.children).toEqual([{ kind: 'text', text }]);
      }),
      { numRuns: 300 },
    );
  });

  it('escapes entity-looking text instead of passing it through', () => {
    const xml = serializeXml(el([['A', '&amp; &#38; &foo; <x> "q"']]));
    expect(xml).toContain('A="&amp;amp; &amp;#38; &amp;foo; &lt;x&gt; &quot;q&quot;"');
  });

  it('writes the frozen CFDI without any whitespace between nodes and with the XML declaration', () => {
    const { xml } = freezeComprobante(ingresoRequest(), loadTestCsd('EKU9003173C9'));
    expect(xml.startsWith('<?xml version="1.0" encoding="UTF-8"?><cfdi:Comprobante ')).toBe(true);
    expect(xml).not.toMatch(/>\s+</);
  });
});
