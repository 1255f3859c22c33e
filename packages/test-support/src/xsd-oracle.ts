/**
 * XSD validation of CFDI documents with libxml2's xmllint compiled to WebAssembly (`xmllint-wasm`,
 * from npm: an oracle independent of the PAC sandbox's native libxml2). The SAT schemas come from the
 * SAT folder, with catCFDI.xsd rendered by cfdi-core from the SAT catalogues (`catalogSchema`: the
 * SAT's own is several MiB and not shipped), and a wrapper schema that imports CFDI 4.0, Pagos 2.0
 * and TFD 1.1 so `xs:any` in Complemento is validated strictly.
 */
import { SCHEMA_WRAPPER } from '@timbra/cfdi-core';
import { schemaFiles } from '@timbra/cfdi-node';
import { validateXML, type XMLFileInfo } from 'xmllint-wasm';
import { SAT_DIR } from './sat-files.ts';

export class SchemaValidator {
  private readonly preload: XMLFileInfo[];

  constructor() {
    this.preload = schemaFiles(SAT_DIR);
  }

  /** Validates documents; returns the errors of each invalid one (empty = all valid). */
  async validate(xmlDocuments: readonly string[]): Promise<{ index: number; errors: string }[]> {
    const xml = xmlDocuments.map((contents, i) => ({ fileName: `doc-${i}.xml`, contents }));
    const result = await validateXML({
      xml,
      schema: { fileName: 'all.xsd', contents: SCHEMA_WRAPPER },
      preload: this.preload,
      maxMemoryPages: 4096, // 256 MiB: a batch of documents with the SAT schemas loaded
    });
    if (result.valid) return [];
    return xml
      .map(({ fileName }, index) => ({
        index,
        errors: result.errors
          .filter((e) => e.loc?.fileName === fileName || e.rawMessage.startsWith(fileName))
          .map((e) => e.rawMessage)
          .join('\n'),
      }))
      .filter((r) => r.errors.length > 0);
  }
}
