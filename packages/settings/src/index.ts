/**
 * @timbra/settings — every setting the API and the worker read, in one schema: each app parses its
 * part (`apiSettings`, `workerSettings`), and docs/configuration.md is written from the same
 * sections (`configurationDoc`). Secrets may come from files (`<NAME>_FILE`), read here before any
 * schema parses them.
 */
export { SECRET_SETTINGS, withSecretFiles } from './secret-files.ts';
export { bool, type SettingsEntry, type SettingsSection } from './define.ts';
export { apiSettings, workerSettings, type ApiSettings, type WorkerSettings } from './schemas.ts';
export { SANDBOX_PAC } from './worker.ts';
export { configurationDoc } from './document.ts';
