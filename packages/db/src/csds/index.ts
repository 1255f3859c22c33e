/** `@timbra/db/csds`: the emisor's CSDs, stored sealed, and the one that seals at a moment. */
export {
  CsdAlreadyStored,
  activeCsd,
  chooseActive,
  csdToWatch,
  csdsToWatch,
  listCsds,
  sealingCsd,
  storeCsd,
  type CsdView,
  type StoredCsd,
} from './csds.ts';
