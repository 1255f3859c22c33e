/** `@timbra/db/csds`: the emisor's CSDs and e.firmas, stored sealed, and the one in use at a moment. */
export {
  CsdAlreadyStored,
  activeCsd,
  chooseActive,
  csdToWatch,
  listCsds,
  sealingCsd,
  storeCsd,
  type CsdView,
  type StoredCsd,
} from './csds.ts';
export {
  EfirmaAlreadyStored,
  chooseCurrentEfirma,
  currentEfirma,
  efirmaToWatch,
  listEfirmas,
  storeEfirma,
  type EfirmaView,
  type StoredEfirma,
} from './efirmas.ts';
export { csdsToWatch, efirmasToWatch, type Watched } from './expiry.ts';
