// Shared settings (two test files at a time): jest.preset.js at the repository root.
export { default } from '../../jest.preset.js';
