/* Mounts the player (app/view/player/) in the page's gr.HTML and hands it each `payload` update (app/ui/page_assets.py). */
const mount = element.querySelector('.cv-mount');
const query = new URLSearchParams(window.location.search);
const onPresenter = (on) => document.body.classList.toggle('cv-presenting', on);
let picker = null;  // the presenter's compact picker (app/ui/presenter_picker.js), made on first use
const onPick = () => { picker = picker || window.ConvergePicker(mount); picker.toggle(); };
const player = window.ConvergePlayer.create(mount, {presenter: query.get('presenter') === '1', onPresenter, onPick});
const show = () => {
  if (!props.payload) return;
  const data = JSON.parse(props.payload);
  player.update(data);
  if (data.reveal) mount.scrollIntoView({block: 'start'});  // a recording loaded from the library shows itself
};
show();
watch('payload', show);
