// Drives blockbook-client (npm, with its response type validation on)
// against a running `utxostore serve --index`. Every value it checks comes
// from the environment, computed by the Go test from the raw block file.
// It prints one line per passed call, "SUBSCRIBED" once it listens for new
// blocks, and exits non-zero on the first failure.
'use strict'
const { BlockbookBitcoin } = require('blockbook-client')

const env = (name) => {
  const v = process.env[name]
  if (v === undefined) throw new Error(`${name} is not set`)
  return v
}
const want = JSON.parse(env('BB_WANT'))
const client = new BlockbookBitcoin({ nodes: [env('BB_URL')], disableTypeValidation: false, requestTimeoutMs: 60000, logger: null })

function check(name, cond, got) {
  if (!cond) {
    throw new Error(`${name}: unexpected ${JSON.stringify(got).slice(0, 2000)}`)
  }
  console.log(`ok ${name}`)
}

async function main() {
  const status = await client.getStatus()
  check('getStatus', status.blockbook.bestHeight === want.tipHeight && status.backend.bestBlockHash === want.tipHash, status)

  const best = await client.getBestBlock()
  check('getBestBlock', best.height === want.tipHeight && best.hash === want.tipHash, best)

  const hash170 = await client.getBlockHash(170)
  check('getBlockHash(170)', hash170 === want.block170.hash, hash170)

  const tx = await client.getTx(want.tx.txid)
  check('getTx', tx.fees === want.tx.fees && tx.valueIn === want.tx.valueIn && tx.value === want.tx.value &&
    tx.blockHeight === 170 && tx.vin[0].addresses[0] === want.tx.vinAddress &&
    tx.vout.map((o) => o.addresses[0]).join() === want.tx.voutAddresses.join() && tx.vout.every((o) => o.isAddress), tx)

  const spending = await client.httpRequest('GET', `/api/v2/tx/${want.tx.txid}?spending=true`)
  const spentOut = spending.vout[1]
  check('tx ?spending=true', spentOut.spent === true && spentOut.spentTxId === want.tx.spentTxId &&
    (spentOut.spentIndex ?? 0) === want.tx.spentIndex && spentOut.spentHeight === want.tx.spentHeight, spending.vout)

  const gone = await client.getTx(want.fullySpent)
  check('getTx(fully spent coinbase)', gone.vout.every((o) => o.spent === true) && gone.vin[0].coinbase !== undefined &&
    gone.valueIn === '0' && gone.fees === '0', gone)

  const spec = await client.getTxSpecific(want.tx.txid)
  check('getTxSpecific', spec.txid === want.tx.txid && spec.hex === tx.hex && spec.vin[0].txid === want.tx.vinTxid, spec)

  const genesis = await client.getAddressDetails(want.genesisAddress, { details: 'basic' })
  check('getAddressDetails(genesis, basic)', genesis.balance === want.genesisBalance && genesis.txs === 1, genesis)

  const genesisTxids = await client.getAddressDetails(want.genesisAddress)
  check('getAddressDetails(genesis, txids)', genesisTxids.txids.join() === want.genesisTxids.join() && genesisTxids.page === 1, genesisTxids)

  const satoshi = await client.getAddressDetails(want.spender.address, { details: 'txs', pageSize: 2 })
  check('getAddressDetails(12cbQ…, txs)', satoshi.balance === want.spender.balance && satoshi.txs === want.spender.txs &&
    satoshi.transactions.length === Math.min(2, want.spender.txs) && satoshi.itemsOnPage === 2, satoshi)

  // Blockbook leaves a height of 0 out (omitempty), so the genesis UTXO has none.
  const utxos = await client.getUtxosForAddress(want.genesisAddress)
  check('getUtxosForAddress(genesis)', utxos.length === 1 && utxos[0].value === want.genesisBalance && utxos[0].coinbase === true &&
    (utxos[0].height ?? 0) === 0 && utxos[0].confirmations === want.tipHeight + 1, utxos)

  const block = await client.getBlock(170)
  check('getBlock(170)', block.txCount === 2 && block.txs.length === 2 && block.txs.map((t) => t.txid).join() === want.block170.txids.join() &&
    block.hash === want.block170.hash && block.difficulty === '1', block)

  const byHash = await client.getBlock(want.block170.hash)
  check('getBlock(hash)', byHash.height === 170, byHash)

  const xpub = await client.getXpubDetails(want.xpub, { details: 'tokenBalances', tokens: 'derived' })
  check('getXpubDetails', xpub.address === want.xpub && xpub.balance === '0' && xpub.tokens.length === 40 &&
    xpub.tokens[0].path === "m/44'/0'/0'/0/0" && xpub.tokens[0].name === want.xpubFirstAddress, xpub)

  const fee = await client.estimateFee(2)
  check('estimateFee(2) without a node', /^[0-9]+\.[0-9]{8}$/.test(fee) && Number(fee) >= 0.00001, fee)

  const history = await client.httpRequest('GET', `/api/v2/balancehistory/${want.spender.address}`)
  const received = history.reduce((s, h) => s + BigInt(h.received), 0n) - history.reduce((s, h) => s + BigInt(h.sent), 0n)
  check('balancehistory', received.toString() === want.spender.balance, history)

  await client.connect()
  const info = await client.getInfo()
  check('websocket getInfo', info.bestHeight === want.tipHeight && info.bestHash === want.tipHash && info.block0Hash === want.genesisHash, info)
  const wsFees = await client.wsRequest('estimateFee', { blocks: [2, 6], specific: { txsize: 250 } })
  check('websocket estimateFee', wsFees.length === 2 && wsFees[0].feePerUnit === BigInt(fee.replace('.', '')).toString() &&
    wsFees.every((f) => BigInt(f.feePerTx) === BigInt(f.feePerUnit) * 250n / 1000n), wsFees)
  const wsHash = await client.getBlockHash(170)
  check('websocket getBlockHash', wsHash === want.block170.hash, wsHash)
  const wsTx = await client.getTx(want.tx.txid)
  check('websocket getTransaction', wsTx.fees === want.tx.fees, wsTx)
  const wsAccount = await client.getAddressDetails(want.genesisAddress, { details: 'basic' })
  check('websocket getAccountInfo', wsAccount.balance === want.genesisBalance, wsAccount)
  const wsUtxo = await client.getUtxosForAddress(want.genesisAddress)
  check('websocket getAccountUtxo', wsUtxo.length === 1, wsUtxo)
  const wsHistory = await client.wsRequest('getBalanceHistory', { descriptor: want.spender.address })
  check('websocket getBalanceHistory', Array.isArray(wsHistory) && wsHistory.length > 0, wsHistory)
  const pong = await client.wsRequest('ping', {})
  check('websocket ping', typeof pong === 'object', pong)

  const seen = []
  const addressPushes = []
  let resolveBlocks
  const allBlocks = new Promise((resolve) => { resolveBlocks = resolve })
  await client.subscribeAddresses([want.newBlockAddress], (e) => { addressPushes.push(e) })
  await client.subscribeNewBlock((e) => {
    seen.push(e)
    if (e.height === want.lastHeight) resolveBlocks()
  })
  console.log('SUBSCRIBED')
  await allBlocks
  const heights = seen.map((e) => e.height)
  check('subscribeNewBlock', heights.join() === want.newHeights.join() && seen[seen.length - 1].hash === want.lastHash, seen)
  const lastBlock = await client.getBlock(want.lastHeight)
  check('getBlock(a block connected while listening)', lastBlock.hash === want.lastHash && lastBlock.txs.length === lastBlock.txCount, lastBlock)
  check('subscribeAddresses', addressPushes.some((e) => e.address === want.newBlockAddress && e.tx.txid === want.newBlockTxid), addressPushes)
  await client.disconnect()
}

main().then(() => process.exit(0), (e) => {
  console.error(`FAIL ${e && e.stack ? e.stack : e}`)
  process.exit(1)
})
