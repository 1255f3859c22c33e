// Shared settings: jest.preset.js at the repository root.
import preset from '../../jest.preset.js';

// Two test files at a time: most of the worker's tests wait on processes they start (the PAC
// sandbox, the API, the ops CLI), so two share the machine's cores well (measured on 2 cores:
// 184 s instead of 276 s for the package).
export default { ...preset, maxWorkers: 2 };
