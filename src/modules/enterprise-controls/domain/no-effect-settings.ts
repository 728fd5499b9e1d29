/**
 * The enterprise settings this server accepts and stores but does not act on yet, each with the
 * reason (docs/controls.md lists every setting). The schemas mark them, answers that set one warn,
 * and the agent policy says which are set. A setting leaves this list when something acts on it.
 */
export const NO_EFFECT_SETTINGS: Readonly<Record<string, string>> = {
  wikiCloudSync: 'this server has no wiki.',
  ideAutoConnect: 'the reference agent has no IDE integration.',
  'missionPolicy.restrictedAccess': 'this server has no missions.',
  'missionPolicy.allowedUserIds': 'this server has no missions.',
  disableAutoUpdate: 'the reference agent is updated with the server’s package; it does not update itself.',
};
